import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import tap from 'tap'

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
const newName = () => `plant_store_test_${process.pid}_${++counter}_${randomBytes(4).toString('hex')}`

/**
 * What a database holds beyond what CREATE DATABASE gives: every user object of every catalog
 * (its oid at or above FirstNormalObjectId, 16384), the public schema's owner and rights, and the
 * database's own settings. Equal to a new database's: the database is as good as new.
 */
const CONTENTS = `SELECT json_build_object(
  'objects', (SELECT json_object_agg(catalog, n) FROM (
    SELECT 'pg_class' AS catalog, count(*) AS n FROM pg_class WHERE oid >= 16384
    UNION ALL SELECT 'pg_proc', count(*) FROM pg_proc WHERE oid >= 16384
    UNION ALL SELECT 'pg_type', count(*) FROM pg_type WHERE oid >= 16384
    UNION ALL SELECT 'pg_namespace', count(*) FROM pg_namespace WHERE oid >= 16384 AND nspname <> 'public' AND nspname !~ '^pg_(toast_)?temp_'
    UNION ALL SELECT 'pg_constraint', count(*) FROM pg_constraint WHERE oid >= 16384
    UNION ALL SELECT 'pg_trigger', count(*) FROM pg_trigger WHERE oid >= 16384
    UNION ALL SELECT 'pg_policy', count(*) FROM pg_policy WHERE oid >= 16384
    UNION ALL SELECT 'pg_rewrite', count(*) FROM pg_rewrite WHERE oid >= 16384
    UNION ALL SELECT 'pg_collation', count(*) FROM pg_collation WHERE oid >= 16384
    UNION ALL SELECT 'pg_operator', count(*) FROM pg_operator WHERE oid >= 16384
    UNION ALL SELECT 'pg_cast', count(*) FROM pg_cast WHERE oid >= 16384
    UNION ALL SELECT 'pg_extension', count(*) FROM pg_extension WHERE oid >= 16384
    UNION ALL SELECT 'pg_event_trigger', count(*) FROM pg_event_trigger
    UNION ALL SELECT 'pg_publication', count(*) FROM pg_publication
    UNION ALL SELECT 'pg_foreign_server', count(*) FROM pg_foreign_server
    UNION ALL SELECT 'pg_default_acl', count(*) FROM pg_default_acl
    UNION ALL SELECT 'pg_largeobject_metadata', count(*) FROM pg_largeobject_metadata
    UNION ALL SELECT 'pg_db_role_setting', count(*) FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  ) AS counts),
  'public', (SELECT json_build_array(pg_get_userbyid(nspowner), nspacl::text) FROM pg_namespace WHERE nspname = 'public'),
  'database', (SELECT json_build_array(pg_get_userbyid(datdba), datallowconn, datconnlimit, datacl::text, datistemplate)
    FROM pg_database WHERE datname = current_database())
)::text AS contents`

/** What a new database holds (CONTENTS), read from the first one this process made. */
let newContents: string | undefined
/** Databases emptied after a test and found as good as new: the next tests take them. */
const spares: string[] = []

const urlOf = (name: string) => {
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  return url.href
}

/**
 * A new, empty database on the test server, gone at the test's teardown: its URL.
 *
 * Making one costs PostgreSQL ~0.24 s of CPU and ~0.2 s of waiting (a copy of template1), one at a
 * time: 169 of them were a sixth of npm test's CPU. So a database a test is done with is emptied
 * instead, and given to a later test under a new name (a client still holding the old one finds
 * no database, as when it was dropped) once it holds what a new one holds (CONTENTS).
 */
export async function freshDatabase (t: Teardown): Promise<string> {
  const reason = await unreachable()
  if (reason !== undefined) throw new Error(reason)
  const name = spares.pop() ?? await createDatabase()
  t.teardown(() => reuseOrDrop(name))
  return urlOf(name)
}

async function createDatabase (): Promise<string> {
  const name = newName()
  await sqlOn(SERVER_URL, `CREATE DATABASE ${name}`)
  if (newContents === undefined) {
    newContents = (await sqlOn<{ contents: string }>(urlOf(name), CONTENTS))[0].contents
    // At the end of this process, the spares are dropped.
    tap.teardown(() => Promise.all(spares.splice(0).map((spare) => dropDatabase(spare))))
  }
  return name
}

// FORCE: a store that failed to close must not leave the database behind.
const dropDatabase = (name: string) => sqlOn(SERVER_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)

/** Empties the database `name` under a new name and keeps it as a spare if it is then as good as new; else drops it. */
async function reuseOrDrop (name: string): Promise<void> {
  const spare = newName()
  try {
    await sqlOn(SERVER_URL, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    await endSessions(name)
    await sqlOn(SERVER_URL, `ALTER DATABASE ${name} RENAME TO ${spare}; ALTER DATABASE ${spare} RESET ALL;
      ALTER DATABASE ${spare} CONNECTION LIMIT -1; ALTER DATABASE ${spare} ALLOW_CONNECTIONS true`)
    const client = await connect(urlOf(spare))
    try {
      const { rows: schemas } = await client.query<{ name: string }>(`SELECT nspname AS name FROM pg_namespace
        WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname !~ '^pg_(toast_)?temp_'`)
      await client.query(`${schemas.map((schema) => `DROP SCHEMA "${schema.name}" CASCADE;`).join(' ')}
        CREATE SCHEMA public AUTHORIZATION pg_database_owner; GRANT USAGE ON SCHEMA public TO PUBLIC`)
      if ((await client.query<{ contents: string }>(CONTENTS)).rows[0].contents === newContents) {
        spares.push(spare)
        return
      }
    } finally {
      await client.end()
    }
  } catch {}
  await Promise.all([dropDatabase(name), dropDatabase(spare)])
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
