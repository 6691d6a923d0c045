/**
 * A create whose id was taken when it ran, and gone by the time the store looked again: a race
 * with another session's delete. Neither a 409 (the id is free) nor a 200 (nothing was stored):
 * 503, try again. Real PostgreSQL sessions order the race: a row held uncommitted makes the
 * service's insert wait, a table lock queued behind it holds the service's read-back (or comes
 * before it) while the row is deleted.
 */
import t from 'tap'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN } from '../helpers/app.js'
import { connect, freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()

/**
 * Resolves once a session waits on a lock running `query` (in its SQL: with the change feed on, the
 * store's INSERT is inside a WITH that writes its event too).
 */
async function waiting (url: string, query: string) {
  // 20 ms apart, for 30 s at most: a statement that never waits fails the test, not tap's timeout.
  for (let tries = 0; ; tries++) {
    if (tries === 1500) throw new Error(`no session waited on a lock running ${query}`)
    const rows = await sqlOn(url, 'SELECT 1 FROM pg_stat_activity WHERE wait_event_type = \'Lock\' AND query LIKE $1', [`%${query}%`])
    if (rows.length > 0) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

t.test('an id taken when the insert ran and deleted before the read-back: 503, nothing stored, then a retry stores it', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const app = await buildApp({ tokens: [TOKEN], store: url })
  t.teardown(() => app.close())
  await app.ready()
  const holder = await connect(url)
  const locker = await connect(url)
  t.teardown(() => Promise.all([holder.end(), locker.end()]))

  await holder.query('BEGIN')
  await holder.query('INSERT INTO plants (id, name) VALUES (7, \'held\')')
  const create = app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":7,"name":"mine"}' })
  await waiting(url, 'INSERT INTO "public"."plants"')
  await locker.query('BEGIN')
  const locked = locker.query('LOCK TABLE plants IN ACCESS EXCLUSIVE MODE')
  await waiting(url, 'LOCK TABLE')
  await holder.query('COMMIT') // the service's insert finds the id taken; the lock is granted next
  await locked
  // At once: the read-back waits on this lock, and gives up after the store's lock_timeout (300 ms).
  await locker.query('DELETE FROM plants WHERE id = 7')
  await locker.query('COMMIT')

  const answer = await create
  t.equal(answer.statusCode, 503)
  t.same(answer.json(), { error: 503, message: 'The plant store is unavailable, try again later' })
  t.same(await sqlOn(url, 'SELECT id FROM plants'), [], 'nothing stored')
  const retry = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":7,"name":"mine"}' })
  t.equal(retry.statusCode, 200, 'the retry is stored')
  t.same(await sqlOn(url, 'SELECT id::text, name FROM plants'), [{ id: '7', name: 'mine' }])
})
