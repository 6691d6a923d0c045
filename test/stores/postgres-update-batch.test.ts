/**
 * The PostgreSQL store's updates of one turn of the event loop go as one statement: each is still
 * its own compare-and-set with its own answer, repeats of one id apply in the order they came, and
 * a row another session holds fails only its own update.
 */
import t from 'tap'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { revisionOf } from '../../plugins/store/revision.js'
import { connect, freshDatabase, postgresSkip, SERVER_URL, sqlOn, untilSessionWaitsForLock } from '../helpers/postgres.js'

const skip = await postgresSkip()

t.test('one turn: each update answered alone, repeats of an id in arrival order, a missing id not-found', { skip }, async (t) => {
  const store = await openPostgresStore(await freshDatabase(t))
  t.teardown(() => store.close())
  const start = revisionOf(await store.create({ id: 1n, name: 'one' }))!
  await store.create({ id: 2n, name: 'two', tag: 'x' })
  // Started in one turn: one batch.
  const results = await Promise.all([
    store.update(1n, { name: 'a' }),
    store.update(2n, { name: 'b' }),
    store.update(1n, { name: 'c', tag: 't' }),
    store.update(1n, { name: 'stale' }, { ifRevision: [start] }),
    store.update(3n, { name: 'ghost' }),
    store.update(2n, { name: 'kept' }, { ifRevision: ['nothing'] })
  ])
  t.same(results, [{ name: 'a' }, { name: 'b' }, { name: 'c', tag: 't' }, 'precondition-failed', 'not-found', 'precondition-failed'])
  t.equal(revisionOf(results[2] as { name: string }), String(BigInt(start) + 2n), 'the later update of id 1 came after the earlier')
  t.same(await store.get(1n), { name: 'c', tag: 't' })
  t.same(await store.get(2n), { name: 'b' })
  t.equal(await store.get(3n), undefined, 'an update never creates')
})

t.test('a row another session holds: its update fails (503) once lock_timeout passes, the others of its turn are written', { skip }, async (t) => {
  const url = await freshDatabase(t)
  await sqlOn(SERVER_URL, `ALTER DATABASE ${new URL(url).pathname.slice(1)} SET lock_timeout = '100ms'`)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  for (const id of [1n, 2n, 3n]) await store.create({ id, name: 'start' })
  const blocker = await connect(url)
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  await blocker.query('SELECT 1 FROM plants WHERE id = 2 FOR UPDATE')
  const results = await Promise.allSettled([1n, 2n, 3n].map((id) => store.update(id, { name: 'updated' })))
  t.same(results.map(({ status }) => status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { statusCode: 503, cause: { code: '55P03' } }, 'the held row: the lock_timeout')
  await blocker.query('ROLLBACK')
  t.same([await store.get(1n), await store.get(2n), await store.get(3n)], [{ name: 'updated' }, { name: 'start' }, { name: 'updated' }])
})

t.test('an update without If-Match waiting for a row that another transaction then deletes is not-found, never a failed precondition', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  await store.create({ id: 1n, name: 'start' })
  const blocker = await connect(url)
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  await blocker.query('DELETE FROM plants WHERE id = 1')
  const update = store.update(1n, { name: 'updated' })
  // The update waits for the deleting transaction's row lock, then finds the row gone.
  const monitor = await connect(SERVER_URL)
  t.teardown(() => monitor.end())
  await untilSessionWaitsForLock(monitor, new URL(url).pathname.slice(1))
  await blocker.query('COMMIT')
  t.equal(await update, 'not-found')
  t.equal(await store.get(1n), undefined)
})
