import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'

/** The server the PostgreSQL tests use; each test gets its own database there. */
export const SERVER_URL = process.env.PLANT_STORE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

interface Teardown { teardown (fn: () => unknown): void }

/** A connected client for the database at `url`; the caller ends it. */
export async function connect (url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  client.on('error', () => {}) // a failure also rejects the query running
  await client.connect()
  return client
}

/** Runs `sql` on the database at `url`, e.g. to look behind a store: its rows. */
export async function sqlOn<R extends pg.QueryResultRow> (url: string, sql: string, values: unknown[] = []) {
  const client = await connect(url)
  try {
    return (await client.query<R>(sql, values)).rows
  } finally {
    await client.end()
  }
}

let probe: Promise<string | undefined> | undefined

/** Why the test server cannot be used, or undefined when it answers (asked once per process). */
function unreachable (): Promise<string | undefined> {
  probe ??= sqlOn(SERVER_URL, 'SELECT 1').then(
    () => undefined,
    (error: Error) => `PostgreSQL at ${new URL(SERVER_URL).host} is unreachable (${error.message}); set PLANT_STORE_TEST_PG_URL`)
  return probe
}

export async function postgresAvailable (): Promise<boolean> {
  return await unreachable() === undefined
}

/**
 * The tap `skip` option for PostgreSQL tests: a one-line reason when the server is unreachable,
 * except under CI=true, where every store must be tested, so the tests run and fail.
 */
export async function postgresSkip (): Promise<string | false> {
  const reason = await unreachable()
  return reason !== undefined && process.env.CI !== 'true' ? reason : false
}

let counter = 0

/** A new, empty database on the test server, dropped at the test's teardown: its URL. */
export async function freshDatabase (t: Teardown): Promise<string> {
  const reason = await unreachable()
  if (reason !== undefined) throw new Error(reason)
  const name = `plant_store_test_${process.pid}_${++counter}_${randomBytes(4).toString('hex')}`
  await sqlOn(SERVER_URL, `CREATE DATABASE ${name}`)
  // FORCE: a store that failed to close must not leave the database behind.
  t.teardown(() => sqlOn(SERVER_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  return url.href
}

/**
 * A new login role on the database at `url` that may read and write its tables but create nothing
 * (the tables are made first); dropped at the test's teardown: the URL that connects as it.
 */
export async function roleWithoutCreate (t: Teardown, url: string): Promise<string> {
  const role = `plant_store_app_${randomBytes(4).toString('hex')}`
  await sqlOn(url, `CREATE ROLE ${role} LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`)
  t.teardown(async () => { await sqlOn(url, `DROP OWNED BY ${role}`); await sqlOn(url, `DROP ROLE ${role}`) })
  const asRole = new URL(url)
  asRole.username = role
  return asRole.href
}

/**
 * Ends every session on the database `name`, as a failover or an administrator does: how many.
 * Resolves once the server lists none of them and the event loop has turned once more: a session
 * writes its end to its client before it is gone, so each client here has read it by then.
 */
export async function endSessions (name: string): Promise<number> {
  const sessions = await sqlOn<{ pid: number, ended: boolean }>(SERVER_URL,
    'SELECT pid, pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])
  const pids = sessions.filter(({ ended }) => ended).map(({ pid }) => pid)
  const left = async () => (await sqlOn<{ n: number }>(SERVER_URL, 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1)', [pids]))[0].n
  for (const end = Date.now() + 10_000; await left() > 0;) {
    if (Date.now() > end) throw new Error(`sessions ${pids.join(', ')} of ${name} still there after 10 s`)
    await sleep(5)
  }
  await new Promise((resolve) => setImmediate(resolve))
  return pids.length
}

/** Makes the database at `url` refuse connections and ends the open ones: down until the function it resolves is called. */
export async function downFor (url: string): Promise<() => Promise<unknown>> {
  const name = new URL(url).pathname.slice(1)
  await sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
  await endSessions(name)
  return () => sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
}

/** Whether a session of database `name` waits for a lock, as `monitor` (any session on the server) sees it. */
export async function sessionWaitsForLock (monitor: pg.Client, name: string): Promise<boolean> {
  const { rows: [{ n }] } = await monitor.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [name])
  return n > 0
}

/** Resolves once a session of database `name` waits for a lock. */
export async function untilSessionWaitsForLock (monitor: pg.Client, name: string): Promise<void> {
  while (!await sessionWaitsForLock(monitor, name)) await new Promise((resolve) => setImmediate(resolve))
}
