import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN, type App } from '../helpers/app.js'
import { assertUnavailable } from '../helpers/load.js'
import { connect, endSessions, freshDatabase, postgresSkip, sessionWaitsForLock, SERVER_URL, sqlOn } from '../helpers/postgres.js'
import { heldRow } from '../helpers/postgres-outages.js'

// Each fault is made as it happens on a real server, to a database of the test's own; what a
// client sees is checked through the app: 503 (never 500) while it lasts, service again after it,
// without a restart, and /readyz 503 whenever plant requests fail for the store's sake.

const pgSkip = await postgresSkip()

interface Setup { app: App, store: PlantStore, url: string, name: string }

async function setUp (t: Test, before?: (name: string) => Promise<unknown>): Promise<Setup> {
  const url = await freshDatabase(t)
  const name = new URL(url).pathname.slice(1)
  await before?.(name)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  const app = await buildApp({ tokens: [TOKEN], store })
  t.teardown(() => app.close())
  return { app, store, url, name }
}

const post = (app: App, id: number | string, name = `plant ${id}`) => app.inject({
  method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"${name}"}`
})
const get = (app: App, id: number) => app.inject({ url: `/plants/${id}`, headers: AUTH })
const remove = (app: App, id: number) => app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH })
const ready = (app: App) => app.inject({ url: '/readyz' })

/** A create, a read of plant 1 and /readyz all answer 503. */
async function assertDown (t: Test, app: App, create = 'a create') {
  assertUnavailable(t, await post(app, 2), create)
  assertUnavailable(t, await get(app, 1), 'a read')
  assertUnavailable(t, await ready(app), '/readyz')
}

/** Sends creates of new ids until one answers 200 (within `limit` ms): the statuses before it. */
async function resumes (t: Test, app: App, firstId: number, limit = 5000) {
  const start = performance.now()
  const before: number[] = []
  for (let id = firstId; performance.now() - start < limit; id++) {
    const reply = await post(app, id)
    if (reply.statusCode === 200) {
      t.pass(`a create succeeds again after ${Math.round(performance.now() - start)} ms, without a restart`)
      t.ok(before.every((status) => status === 503), 'and until then, creates answered 503', { found: before })
      return
    }
    before.push(reply.statusCode)
    await sleep(50)
  }
  t.fail(`no create succeeded within ${limit} ms`, { found: before })
}

t.test('a database that refuses connections (55000): 503, /readyz 503, no false 409; service once it accepts them', { skip: pgSkip }, async (t) => {
  const { app, name } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
  t.teardown(() => sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`))
  await endSessions(name)

  await assertDown(t, app)
  const racers = await Promise.all(Array.from({ length: 10 }, () => post(app, 3)))
  t.strictSame(racers.map(({ statusCode }) => statusCode), Array(10).fill(503),
    '10 concurrent creates of one id: all 503, none 409 (nothing was stored)')

  await sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
  await resumes(t, app, 4)
  t.equal((await ready(app)).statusCode, 200, '/readyz 200 again')
  t.equal((await post(app, 3)).statusCode, 200, 'the id raced for while refused was never stored')
})

t.test('a database dropped (3D000): 503, /readyz 503; service once it is created again', { skip: pgSkip }, async (t) => {
  const { app, name } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(SERVER_URL, `DROP DATABASE ${name} WITH (FORCE)`)

  await assertDown(t, app)

  await sqlOn(SERVER_URL, `CREATE DATABASE ${name}`)
  await resumes(t, app, 3)
  t.equal((await ready(app)).statusCode, 200, '/readyz 200 again')
  t.equal((await get(app, 1)).statusCode, 404, 'the new database is empty: its table was created anew')
})

t.test('the table dropped (42P01): the migration runs again, no 500 and no restart', { skip: pgSkip }, async (t) => {
  const { app, url } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)

  await sqlOn(url, 'DROP TABLE plants')
  t.equal((await get(app, 1)).statusCode, 404, 'a read answers 404: the table is back, empty')
  await sqlOn(url, 'DROP TABLE plants')
  t.equal((await post(app, 1)).statusCode, 200, 'a create of the same id is stored')
  await sqlOn(url, 'DROP TABLE plants')
  t.equal((await ready(app)).statusCode, 200, '/readyz finds the table gone and has it made again')
  t.strictSame(await sqlOn(url, "SELECT to_regclass('plants') IS NOT NULL AS present"), [{ present: true }])
  // A delete writes its feed event: with the events table dropped it fails once, and the outbox tables are made again.
  t.equal((await post(app, 2)).statusCode, 200)
  await sqlOn(url, 'DROP TABLE plants_webhook_events')
  t.not((await remove(app, 2)).statusCode, 200, 'the delete whose event table is gone fails')
  t.equal((await remove(app, 2)).statusCode, 204, 'the next one finds the tables made again')
})

t.test('prepared statements lost by the session, as behind a pooler (26000): the create is stored through another connection, no 500', { skip: pgSkip }, async (t) => {
  const { app, url } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200, 'the batch INSERT is now prepared on a pooled connection')
  // What PgBouncer's DISCARD ALL (transaction pooling) does: the server forgets the session's
  // statements while the driver still holds them as prepared. Made on the store's own connection,
  // the next time it runs a statement it has prepared.
  type Query = (this: pg.Client, ...args: unknown[]) => Promise<unknown>
  const query = pg.Client.prototype.query as unknown as Query
  // Once per create, on the create's own statement: the feed's reads share the pool, and a create
  // whose retry met a second lost session (another connection's) would be a double fault.
  let deallocated = 0
  let armed = false
  const deallocating: Query = async function (this: pg.Client, ...args: unknown[]) {
    const { name, text } = (args[0] ?? {}) as { name?: string, text?: string }
    const prepared = (this as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements
    if (armed && name !== undefined && prepared[name] !== undefined && text?.includes('INSERT INTO') === true) {
      armed = false
      deallocated++
      await query.call(this, 'DEALLOCATE ALL')
    }
    return query.apply(this, args)
  }
  pg.Client.prototype.query = deallocating as unknown as typeof pg.Client.prototype.query
  t.teardown(() => { pg.Client.prototype.query = query as unknown as typeof pg.Client.prototype.query })
  for (const id of [2, 3, 4, 5]) {
    armed = true
    t.equal((await post(app, id)).statusCode, 200, `create ${id}`)
  }
  t.ok(deallocated > 0, 'a prepared statement was lost under the store')
  t.strictSame((await sqlOn(url, 'SELECT id FROM plants ORDER BY id')).map(({ id }) => Number(id)), [1, 2, 3, 4, 5], 'every create stored')
})

t.test('the schema dropped (3F000): 503 and /readyz 503 until it is back, then service', { skip: pgSkip }, async (t) => {
  const { app, url } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(url, 'DROP SCHEMA public CASCADE')

  await assertDown(t, app, 'a create, with no schema to make the table in')

  await sqlOn(url, 'CREATE SCHEMA public')
  await resumes(t, app, 3)
  t.equal((await ready(app)).statusCode, 200, '/readyz 200 again')
})

t.test('a read-only database, as after a failover to a standby (25006): writes 503, reads 200, /readyz 503', { skip: pgSkip }, async (t) => {
  const { app, name } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(SERVER_URL, `ALTER DATABASE ${name} SET default_transaction_read_only = on`)
  await endSessions(name)

  assertUnavailable(t, await post(app, 2), 'a create')
  assertUnavailable(t, await remove(app, 1), 'a delete')
  t.equal((await get(app, 1)).statusCode, 200, 'a read answers 200')
  assertUnavailable(t, await ready(app), '/readyz')

  // Without ending the sessions: the store itself drops the connections that were read-only.
  await sqlOn(SERVER_URL, `ALTER DATABASE ${name} RESET default_transaction_read_only`)
  await resumes(t, app, 3)
  t.equal((await ready(app)).statusCode, 200, '/readyz 200 again')
  t.equal((await remove(app, 1)).statusCode, 204, 'a delete again')
})

t.test('a lock held past lock_timeout (55P03): 503, and /readyz stays 200 for one row', { skip: pgSkip }, async (t) => {
  // A short lock_timeout set for the database, as a DBA might.
  const { app, store, url } = await setUp(t, (name) => sqlOn(SERVER_URL, `ALTER DATABASE ${name} SET lock_timeout = '100ms'`))
  const blocker = await heldRow(t, url)
  assertUnavailable(t, await post(app, 1), 'a create of the row locked')
  // What ended it (the store's own bound, within 2 s: test/system/processes/postgres-unavailable.test.ts).
  await t.rejects(store.create({ id: 1n, name: 'fern' }), { statusCode: 503, cause: { code: '55P03' } }, 'the lock_timeout')
  t.equal((await ready(app)).statusCode, 200, '/readyz 200: the store answers')
  await blocker.query('ROLLBACK')
  t.equal((await post(app, 1)).statusCode, 200, 'stored once the lock is gone')

  await blocker.query('BEGIN')
  await blocker.query('LOCK TABLE plants IN ACCESS EXCLUSIVE MODE')
  assertUnavailable(t, await get(app, 1), 'a read of a table locked whole')
  assertUnavailable(t, await ready(app), '/readyz, which cannot read the table either')
  await blocker.query('ROLLBACK')
  t.equal((await get(app, 1)).statusCode, 200, 'a read once the lock is gone')
})

t.test('a real deadlock with another session (40P01): no 500', { skip: pgSkip }, async (t) => {
  // The store's sessions look for a deadlock after 200 ms of waiting (below their lock_timeout); the
  // other session much later, so that PostgreSQL cancels the store's statement, not the other one.
  const { url, name } = await setUp(t, (name) => sqlOn(SERVER_URL, `ALTER DATABASE ${name} SET deadlock_timeout = '200ms'`))
  const [other, monitor] = await Promise.all([connect(url), connect(SERVER_URL)])
  t.teardown(() => Promise.all([other.end(), monitor.end()]))
  await other.query("SET deadlock_timeout = '10s'")
  const deadlocks = async () => Number((await monitor.query<{ deadlocks: string }>(
    'SELECT deadlocks FROM pg_stat_database WHERE datname = $1', [name])).rows[0].deadlocks)
  const storeWaits = () => sessionWaitsForLock(monitor, name)
  const statusOf = (create: Promise<unknown>) => create.then(() => 200, (error) => (error as { statusCode?: number }).statusCode ?? 500)

  // The cycle needs the other session's second insert to wait before the store's session looks
  // for a deadlock (200 ms after it began to wait). On a loaded machine it can come later: no
  // deadlock then, the round proves nothing and is played again with new ids. Each round has its
  // own store: a session reports its statistics (the deadlock count) when it ends.
  for (let round = 0; ; round++) {
    if (round === 5) return t.fail('no deadlock in 5 rounds')
    const store = await openPostgresStore(url)
    const deadlocksBefore = await deadlocks()
    const [mine, theirs] = [BigInt(2 * round + 1), BigInt(2 * round + 2)]
    await other.query('BEGIN')
    await other.query('INSERT INTO plants (id, name) VALUES ($1, \'other\')', [theirs])
    // One batch (two creates of one turn of the event loop): the store inserts `mine`, then waits
    // for the other session's `theirs`...
    const creates = Promise.all([mine, theirs].map((id) => statusOf(store.create({ id, name: 'store' }))))
    while (!await storeWaits()) await sleep(1)
    // ...which then waits for the store's `mine`: a cycle, until PostgreSQL cancels the store's statement.
    await other.query('INSERT INTO plants (id, name) VALUES ($1, \'other\')', [mine]).catch(() => {})
    await other.query('ROLLBACK')
    const statuses = await creates
    await store.close()
    // Reported by the session that found it, once it ended: looked for every 20 ms, for 5 s at most.
    let found = 0
    for (let tries = 0; tries < 250 && found === 0; tries++) {
      found = await deadlocks() - deadlocksBefore
      if (found === 0) await sleep(20)
    }
    if (found === 0) {
      t.comment(`round ${round + 1}: the other insert came too late for a deadlock, again`)
      continue
    }
    t.equal(found, 1, `PostgreSQL found the deadlock (round ${round + 1})`)
    t.comment(`creates caught in the deadlock: ${statuses.join(', ')}`)
    t.notOk(statuses.includes(500), 'neither create is a 500')
    t.ok(statuses.every((status) => status === 200 || status === 503), 'each is 200 (tried again alone) or 503')
    return
  }
})

t.test('a plants table restored without the schema-version table is adopted at start, its plants kept', { skip: pgSkip }, async (t) => {
  const { app } = await setUp(t, async (name) => {
    const url = new URL(SERVER_URL)
    url.pathname = `/${name}`
    await sqlOn(url.href, 'CREATE TABLE plants (id int8 PRIMARY KEY, name text NOT NULL, tag text)')
    await sqlOn(url.href, "INSERT INTO plants VALUES (7, 'restored', NULL)")
  })
  t.strictSame((await get(app, 7)).json(), { name: 'restored' })
  t.equal((await post(app, 8)).statusCode, 200)
  t.equal((await ready(app)).statusCode, 200)
})

t.test('a column renamed under the service: /readyz 503 while plant requests fail, ready again once it is back', { skip: pgSkip }, async (t) => {
  const { app, url } = await setUp(t)
  t.equal((await post(app, 1)).statusCode, 200)
  await sqlOn(url, 'ALTER TABLE plants RENAME COLUMN tag TO label')
  t.equal((await get(app, 1)).statusCode, 503, 'a read answers 503: the table cannot be used until it is fixed')
  t.equal((await ready(app)).statusCode, 503, '/readyz says so')
  await sqlOn(url, 'ALTER TABLE plants RENAME COLUMN label TO tag')
  t.equal((await ready(app)).statusCode, 200)
  t.strictSame((await get(app, 1)).json(), { name: 'plant 1' })
})
