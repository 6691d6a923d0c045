/**
 * A previous release's data, opened by this release's stores in process: the tables upgraded where
 * the role may, refused with what to run where it may not, and a newer release's data left alone.
 * (test/system/processes/store-upgrade.test.ts starts the service on the same data and delivers a webhook.)
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openStore } from '../../plugins/store/index.js'
import type { OutboxStore } from '../../plugins/store/outbox.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { freshDatabase, postgresSkip, roleWithoutCreate, sqlOn } from '../helpers/postgres.js'
import { PREVIOUS_POSTGRES_DDL, PREVIOUS_SQLITE_DDL } from '../helpers/previous-release.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const OUTBOX = {
  endpoints: [{ name: 'e', events: ['plant.created' as const] }],
  payloads: eventPayloads
}
const OLD_ID = 9007199254740993n

function previousSqliteFile (dir: string, version?: number): string {
  const file = join(dir, 'plants.db')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec(PREVIOUS_SQLITE_DDL)
  db.prepare('INSERT INTO plants (id, name) VALUES (?, ?)').run(OLD_ID, 'old')
  if (version !== undefined) db.pragma(`user_version = ${version}`)
  db.close()
  return file
}

t.test('SQLite: the previous release\'s file: its plants kept, the outbox given its new column, a create\'s event stored with it', async (t) => {
  const file = previousSqliteFile(t.testdir())
  const store = openSqliteStore(file)
  t.teardown(() => store.close())
  const outbox = await store.openOutbox({ ...OUTBOX, traceContext: () => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })
  t.strictSame(await store.list({ limit: 10 }), [{ id: OLD_ID, name: 'old' }], 'the old plant is there')
  await store.create({ id: 1n, name: 'new' })
  const [claimed] = await outbox.claim([{ endpoint: 'e', limit: 10 }], 60_000)
  t.match(claimed, { type: 'plant.created', traceContext: /^00-0af7651916cd43dd8448eb211c80319c-/ }, 'the event keeps its trace context')
  const columns = new Database(file, { readonly: true })
  t.teardown(() => columns.close())
  t.ok(columns.prepare('SELECT name FROM pragma_table_info(\'webhook_events\') WHERE name = \'trace_context\'').get(), 'the column was added')
})

t.test('SQLite: a file from a newer release is refused, saying what to do, and left as it was', async (t) => {
  const file = previousSqliteFile(t.testdir(), 7)
  t.throws(() => openSqliteStore(file), {
    message: 'schema version 7 was written by a newer plant-store (this one knows up to 1): run that release, or restore a backup taken before the upgrade'
  })
  const after = new Database(file, { readonly: true })
  t.teardown(() => after.close())
  t.equal(after.pragma('user_version', { simple: true }), 7, 'the version is left as it was')
})

t.test('PostgreSQL', { skip: await postgresSkip() }, async (t) => {
  t.test('the previous release\'s database: plants kept, the outbox given its new column, the version recorded', async (t) => {
    const url = await freshDatabase(t)
    await sqlOn(url, PREVIOUS_POSTGRES_DDL)
    await sqlOn(url, 'INSERT INTO plants (id, name) VALUES ($1, \'old\')', [String(OLD_ID)])
    const store = await openStore(url) as Awaited<ReturnType<typeof openStore>> & OutboxStore
    t.teardown(() => store.close())
    await store.openOutbox(OUTBOX)
    t.strictSame(await store.list({ limit: 10 }), [{ id: OLD_ID, name: 'old' }], 'the old plant is there')
    t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: 1 }], 'the schema version is recorded')
    t.equal((await sqlOn(url, 'SELECT 1 FROM information_schema.columns WHERE table_name = \'plants_webhook_events\' AND column_name = \'trace_context\'')).length,
      1, 'the column was added')
  })

  t.test('the previous release\'s outbox, for a role that may not alter it: refused, saying what its owner runs; nothing altered', async (t) => {
    const url = await freshDatabase(t)
    await sqlOn(url, PREVIOUS_POSTGRES_DDL)
    const store = await openStore(await roleWithoutCreate(t, url)) as Awaited<ReturnType<typeof openStore>> & OutboxStore
    t.teardown(() => store.close())
    await t.rejects(store.openOutbox(OUTBOX), {
      message: 'the webhook events table needs a column this release adds, and this role may not add it: ' +
        'run `ALTER TABLE "public"."plants_webhook_events" ADD COLUMN IF NOT EXISTS trace_context text` as its owner'
    })
    t.equal((await sqlOn(url, 'SELECT 1 FROM information_schema.columns WHERE column_name = \'trace_context\'')).length, 0, 'no column added')
  })

  t.test('a new database and a role that may not CREATE: refused, naming the SQL to have run; no table made', async (t) => {
    const url = await freshDatabase(t)
    await t.rejects(openStore(await roleWithoutCreate(t, url)), {
      message: /^PostgreSQL: plant-store: the PostgreSQL tables cannot be made or upgraded by the database user \(permission denied for schema public\): have an administrator run the SQL that `node server.mjs schema-sql` prints/
    })
    t.strictSame(await sqlOn(url, 'SELECT tablename FROM pg_tables WHERE schemaname = \'public\''), [], 'no table was made')
  })
})
