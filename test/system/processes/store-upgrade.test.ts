import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { assertStopsCleanly, exitWithin, spawnServer, startServer } from '../../helpers/server-process.js'
import { plantBody } from '../../helpers/load.js'
import { freshDatabase, postgresSkip, roleWithoutCreate, sqlOn } from '../../helpers/postgres.js'
import { PREVIOUS_POSTGRES_DDL, PREVIOUS_SQLITE_DDL } from '../../helpers/previous-release.js'
import { schemaSql } from '../../../service/commands/schema-sql.js'
import { SCHEMA_VERSION } from '../../../plugins/store/postgres/schema-version.js'
import { SQLITE_SCHEMA_VERSION } from '../../../plugins/store/sqlite/schema-version.js'
import { startReceiver } from '../../helpers/receiver.js'
import { storedIds, TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret, verifyDelivery } from '../../helpers/webhooks.js'

const OLD_IDS = ['1', '2', '9007199254740993']
const REFUSAL_TAIL = '; set DATABASE_URL to a writable sqlite:<path>, a reachable postgres:// database or memory:.\n'

/** A database as the previous release left it: its tables and OLD_IDS stored. */
async function previousReleaseDatabase (t: Test): Promise<string> {
  const url = await freshDatabase(t)
  await sqlOn(url, PREVIOUS_POSTGRES_DDL)
  for (const id of OLD_IDS) await sqlOn(url, 'INSERT INTO plants (id, name) VALUES ($1, $2)', [id, `old ${id}`])
  return url
}

/** This release started on data the previous one wrote: its plants served, a create delivered as a webhook. */
async function assertServesPreviousData (t: Test, databaseUrl: string) {
  const secret = newSecret()
  const receiver = await startReceiver(t, (response) => { response.statusCode = 204; response.end() })
  const server = await startServer(t, webhookEnv(databaseUrl, receiver.url, secret))
  t.same([...await storedIds(server)].sort(), [...OLD_IDS].sort(), 'every plant the previous release stored is served')
  const created = await fetch(`${server.url}/plants`, {
    method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody('42', 'new')
  })
  t.equal(created.status, 200, 'a create succeeds')
  t.ok(await eventually(() => receiver.received.some(({ body }) => body.includes('"id":42')), 30_000), 'and its webhook is delivered')
  for (const { headers, body } of receiver.received) verifyDelivery(secret, headers, body)
  server.child.kill('SIGTERM')
  assertStopsCleanly(t, server, await exitWithin(server, 15_000))
}

t.test('SQLite: a file the previous release wrote is served, webhooks working', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec(PREVIOUS_SQLITE_DDL)
  for (const id of OLD_IDS) db.prepare('INSERT INTO plants (id, name) VALUES (?, ?)').run(BigInt(id), `old ${id}`)
  db.close()
  await assertServesPreviousData(t, `sqlite:${file}`)
})

t.test('SQLite: a file from a newer release is refused with one line', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const db = new Database(file)
  db.exec(PREVIOUS_SQLITE_DDL)
  db.pragma('user_version = 7')
  db.close()
  const server = spawnServer(t, { DATABASE_URL: `sqlite:${file}` })
  t.same(await exitWithin(server, 60_000), { code: 1, signal: null }, 'the service does not start')
  t.equal(server.stderr(), `Invalid configuration: DATABASE_URL cannot be opened (SQLite file ${file}: schema version 7 was written by a newer ` +
    `plant-store (this one knows up to ${SQLITE_SCHEMA_VERSION}): run that release, or restore a backup taken before the upgrade); ` +
    'set DATABASE_URL to a writable sqlite:<path>, a reachable postgres:// database or memory:.\n')
  const after = new Database(file, { readonly: true })
  t.equal(after.pragma('user_version', { simple: true }), 7, 'the file is left as it was')
  after.close()
})

t.test('PostgreSQL: a database the previous release wrote is upgraded and served, webhooks working', { skip: await postgresSkip() }, async (t) => {
  const url = await previousReleaseDatabase(t)
  await assertServesPreviousData(t, url)
  t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'its schema version is recorded')
})

t.test('PostgreSQL: a database the previous release wrote, for a role that may not CREATE: upgraded by the SQL schema-sql prints, then served, webhooks working',
  { skip: await postgresSkip() }, async (t) => {
    const url = await previousReleaseDatabase(t)
    const asRole = await roleWithoutCreate(t, url)
    await sqlOn(url, schemaSql())
    t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'recorded by the printed SQL')
    await sqlOn(url, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${new URL(asRole).username}`)
    await assertServesPreviousData(t, asRole)
  })

t.test('PostgreSQL: a database from a newer release is refused with one line, and left as it was', { skip: await postgresSkip() }, async (t) => {
  const url = await previousReleaseDatabase(t)
  await sqlOn(url, schemaSql())
  await sqlOn(url, 'UPDATE plants_schema_version SET version = 7')
  const plants = await sqlOn(url, 'SELECT id FROM plants')
  const server = spawnServer(t, { DATABASE_URL: url })
  t.same(await exitWithin(server, 60_000), { code: 1, signal: null }, 'the service does not start')
  t.equal(server.stderr(), 'Invalid configuration: DATABASE_URL cannot be opened (PostgreSQL: plant-store: the PostgreSQL table "public"."plants_schema_version": ' +
    `schema version 7 was written by a newer plant-store (this one knows up to ${SCHEMA_VERSION}): run that release, or restore a backup taken before the upgrade)` + REFUSAL_TAIL)
  t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: 7 }], 'the version is left as it was')
  t.strictSame(await sqlOn(url, 'SELECT id FROM plants'), plants, 'and the plants')
})

t.test('PostgreSQL: a new database and a role that may not CREATE: refused with one line naming the command to run', { skip: await postgresSkip() }, async (t) => {
  const url = await freshDatabase(t)
  const server = spawnServer(t, { DATABASE_URL: await roleWithoutCreate(t, url) })
  t.same(await exitWithin(server, 60_000), { code: 1, signal: null }, 'the service does not start')
  t.equal(server.stderr(), 'Invalid configuration: DATABASE_URL cannot be opened (PostgreSQL: plant-store: the PostgreSQL tables cannot be made or upgraded ' +
    'by the database user (permission denied for schema public): have an administrator run the SQL that `node server.mjs schema-sql` prints, ' +
    'then start plant-store again)' + REFUSAL_TAIL)
})

t.test('PostgreSQL: the previous release\'s outbox, for a role that may not alter it, is refused with one line saying what to run',
  { skip: await postgresSkip() }, async (t) => {
    const url = await freshDatabase(t)
    await sqlOn(url, PREVIOUS_POSTGRES_DDL)
    const asRole = await roleWithoutCreate(t, url)
    const receiver = await startReceiver(t)
    const server = spawnServer(t, webhookEnv(asRole, receiver.url, newSecret()))
    t.same(await exitWithin(server, 60_000), { code: 1, signal: null }, 'the service does not start')
    t.equal(server.stderr(), 'Cannot start: the webhook events table needs a column this release adds, and this role may not add it: ' +
      'run `ALTER TABLE "public"."plants_webhook_events" ADD COLUMN IF NOT EXISTS trace_context text` as its owner\n')
  })
