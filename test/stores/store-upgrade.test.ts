/**
 * Older releases' data, opened by this release's stores in process: version 1 as the release before
 * the landed one wrote it (no trace_context) and as the landed one did (with it), each upgraded step
 * by step with every plant and pending event kept; refused with what to run where the role may not
 * upgrade, and a newer release's data left alone.
 * (test/system/processes/store-upgrade.test.ts starts the service on the same data and delivers a webhook.)
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { openStore } from '../../plugins/store/index.js'
import type { OutboxStore } from '../../plugins/store/outbox.js'
import { SCHEMA_VERSION } from '../../plugins/store/postgres/schema-version.js'
import { SQLITE_SCHEMA_VERSION } from '../../plugins/store/sqlite/schema-version.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { freshDatabase, postgresSkip, roleWithoutCreate, sqlOn } from '../helpers/postgres.js'
import {
  FENCED_POSTGRES_DDL, FENCED_SQLITE_DDL, LANDED_POSTGRES_DDL, LANDED_SQLITE_DDL, PREVIOUS_POSTGRES_DDL, PREVIOUS_SQLITE_DDL, pendingEventSql,
  REVISED_POSTGRES_DDL, REVISED_SQLITE_DDL
} from '../helpers/previous-release.js'
import { revisionOf } from '../../plugins/store/revision.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const OUTBOX = {
  endpoints: [{ name: 'e', events: ['plant.created' as const] }],
  payloads: eventPayloads
}
const OLD_ID = 9007199254740993n
const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const RELEASES = [['the release before the landed one (no trace_context)', PREVIOUS_SQLITE_DDL, PREVIOUS_POSTGRES_DDL],
  ['the landed release (version 1 with trace_context)', LANDED_SQLITE_DDL, LANDED_POSTGRES_DDL],
  ['the release before revisions (SQLite 2, PostgreSQL 3 with its fence)', FENCED_SQLITE_DDL, FENCED_POSTGRES_DDL],
  ['the release before the change feed (SQLite 3, PostgreSQL 4: revisions)', REVISED_SQLITE_DDL, REVISED_POSTGRES_DDL]] as const

function olderSqliteFile (dir: string, ddl: string, version?: number): string {
  const file = join(dir, 'plants.db')
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec(ddl)
  db.prepare('INSERT INTO plants (id, name) VALUES (?, ?)').run(OLD_ID, `old ${OLD_ID}`)
  db.exec(pendingEventSql('sqlite', String(OLD_ID), 'e'))
  if (version !== undefined) db.pragma(`user_version = ${version}`)
  db.close()
  return file
}

/** The old plant is served, its pending event is claimed, and a new create's event keeps its trace context. */
async function assertUpgraded (t: Test, store: PlantStore & OutboxStore, revised: boolean) {
  const outbox = await store.openOutbox({ ...OUTBOX, feed: true, traceContext: () => TRACE })
  t.strictSame(await store.list({ limit: 10 }), [{ id: OLD_ID, name: `old ${OLD_ID}` }], 'the old plant is there')
  const [old] = await outbox.claim([{ endpoint: 'e', limit: 10 }], 60_000)
  t.match(old, { type: 'plant.created', messageId: `msg_old${OLD_ID}`, payload: new RegExp(`"id":${OLD_ID},`) }, 'its pending event is delivered')
  t.notOk('traceContext' in old, 'with no trace context (it had none)')
  await store.create({ id: 1n, name: 'new' })
  const [claimed] = await outbox.claim([{ endpoint: 'e', limit: 10 }], 60_000)
  t.match(claimed, { type: 'plant.created', traceContext: TRACE }, 'a new create\'s event keeps its trace context')
  const revising = store as PlantStore & Required<Pick<PlantStore, 'update' | 'listTagged'>>
  const revision = revisionOf((await store.get(OLD_ID))!) ?? 'none'
  // A plant of a release with revisions has the one its release gave it; one from before, 0.
  if (!revised) t.equal(revision, '0', 'the old plant has revision 0')
  const next = String(BigInt(revision) + 1n)
  t.equal(await revising.update(OLD_ID, { name: 'renamed', tag: 'kept' }, { ifRevision: [next] }), 'precondition-failed')
  const renamed = await revising.update(OLD_ID, { name: 'renamed', tag: 'kept' }, { ifRevision: [revision] })
  t.strictSame(renamed, { name: 'renamed', tag: 'kept' }, 'the old plant updates under its ETag')
  t.equal(revisionOf(renamed as { name: string }), next)
  t.strictSame(await revising.listTagged('kept', { limit: 10 }), [{ id: OLD_ID, name: 'renamed', tag: 'kept' }], 'and lists by its tag')
}

for (const [release, sqliteDdl, postgresDdl] of RELEASES) {
  t.test(`SQLite: a file of ${release}: upgraded to version ${SQLITE_SCHEMA_VERSION}, its plants and pending events kept`, async (t) => {
    const file = olderSqliteFile(t.testdir(), sqliteDdl)
    const store = openSqliteStore(file)
    t.teardown(() => store.close())
    await assertUpgraded(t, store, sqliteDdl === REVISED_SQLITE_DDL)
    const after = new Database(file, { readonly: true })
    t.teardown(() => after.close())
    t.equal(after.pragma('user_version', { simple: true }), SQLITE_SCHEMA_VERSION, 'the version moved with the schema')
  })

  t.test(`PostgreSQL: a database of ${release}: upgraded to version ${SCHEMA_VERSION}, its plants and pending events kept`,
    { skip: await postgresSkip() }, async (t) => {
      const url = await freshDatabase(t)
      await sqlOn(url, postgresDdl)
      await sqlOn(url, `INSERT INTO plants (id, name) VALUES (${OLD_ID}, 'old ${OLD_ID}'); ${pendingEventSql('postgres', String(OLD_ID), 'e')}`)
      const store = await openStore(url) as PlantStore & OutboxStore
      t.teardown(() => store.close())
      await assertUpgraded(t, store, sqliteDdl === REVISED_SQLITE_DDL)
      t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'the version moved with the schema')
    })
}

t.test('SQLite: a file from a newer release is refused, saying what to do, and left as it was', async (t) => {
  const file = olderSqliteFile(t.testdir(), LANDED_SQLITE_DDL, 7)
  t.throws(() => openSqliteStore(file), {
    message: 'schema version 7 was written by a newer plant-store (this one knows up to 4): run that release, or restore a backup taken before the upgrade'
  })
  const after = new Database(file, { readonly: true })
  t.teardown(() => after.close())
  t.equal(after.pragma('user_version', { simple: true }), 7, 'the version is left as it was')
})

t.test('PostgreSQL', { skip: await postgresSkip() }, async (t) => {
  t.test('the previous release\'s outbox, for a role that may not alter it: refused, saying what its owner runs; nothing altered', async (t) => {
    const url = await freshDatabase(t)
    await sqlOn(url, PREVIOUS_POSTGRES_DDL)
    const store = await openStore(await roleWithoutCreate(t, url)) as PlantStore & OutboxStore
    t.teardown(() => store.close())
    await t.rejects(store.openOutbox(OUTBOX), {
      message: 'the webhook events table needs a column this release adds, and this role may not add it: ' +
        'run `ALTER TABLE "public"."plants_webhook_events" ADD COLUMN IF NOT EXISTS trace_context text` as its owner'
    })
    t.equal((await sqlOn(url, 'SELECT 1 FROM information_schema.columns WHERE column_name = \'trace_context\'')).length, 0, 'no column added')
  })

  t.test('the landed release\'s database, for a role that may not upgrade it: refused, naming the SQL to have run; left at version 1', async (t) => {
    const url = await freshDatabase(t)
    await sqlOn(url, LANDED_POSTGRES_DDL)
    await t.rejects(openStore(await roleWithoutCreate(t, url)), {
      message: /^PostgreSQL: plant-store: the PostgreSQL tables cannot be made or upgraded by the database user \(.*\): have an administrator run the SQL that `node server.mjs schema-sql` prints/
    })
    t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: 1 }], 'the version is left as it was')
    t.strictSame(await sqlOn(url, 'SELECT to_regproc(\'plants_schema_fence\') AS fence'), [{ fence: null }], 'and nothing was made')
  })

  t.test('a new database and a role that may not CREATE: refused, naming the SQL to have run; no table made', async (t) => {
    const url = await freshDatabase(t)
    await t.rejects(openStore(await roleWithoutCreate(t, url)), {
      message: /^PostgreSQL: plant-store: the PostgreSQL tables cannot be made or upgraded by the database user \(permission denied for schema public\): have an administrator run the SQL that `node server.mjs schema-sql` prints/
    })
    t.strictSame(await sqlOn(url, 'SELECT tablename FROM pg_tables WHERE schemaname = \'public\''), [], 'no table was made')
  })
})
