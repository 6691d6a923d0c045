import t from 'tap'
import { SCHEMA_VERSION } from '../../plugins/store/postgres/schema-version.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import { ownedByAnotherRole } from '../helpers/postgres-table.js'
import type { OutboxStore } from '../../plugins/store/outbox.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'
import { revisionOf } from '../../plugins/store/revision.js'

const pgSkip = await postgresSkip()

const versions = (url: string) => sqlOn<{ version: number }>(url, 'SELECT version FROM plants_schema_version')

t.test('a new database: the plants table and its schema version, recorded once however often the store opens it', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  for (let run = 0; run < 2; run++) await (await openPostgresStore(url)).close()
  t.strictSame(await versions(url), [{ version: SCHEMA_VERSION }])
  t.equal(SCHEMA_VERSION, 5, 'version 2: the events\' trace_context column; 3: the fence on the tables written; 4: revisions and the tag index; 5: the change feed')
})

t.test('a version record emptied by hand is written again at start', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url)).close()
  await sqlOn(url, 'DELETE FROM plants_schema_version')
  await (await openPostgresStore(url)).close()
  t.strictSame(await versions(url), [{ version: SCHEMA_VERSION }])
})

t.test('a newer version is refused when the store opens, naming the table and what to do; nothing is written', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url, { table: 'garden' })).close()
  await sqlOn(url, `UPDATE garden_schema_version SET version = ${SCHEMA_VERSION + 1}`)
  await t.rejects(openPostgresStore(url, { table: 'garden' }), {
    message: `plant-store: the PostgreSQL table "public"."garden_schema_version": schema version ${SCHEMA_VERSION + 1} was written by a newer ` +
      `plant-store (this one knows up to ${SCHEMA_VERSION}): run that release, or restore a backup taken before the upgrade`
  })
  t.strictSame(await sqlOn(url, 'SELECT version FROM garden_schema_version'), [{ version: SCHEMA_VERSION + 1 }])
})

t.test('a huge version that a release could still have written (a million) is a newer release\'s', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url)).close()
  await sqlOn(url, 'UPDATE plants_schema_version SET version = 1000000')
  await t.rejects(openPostgresStore(url), { message: /: schema version 1000000 was written by a newer plant-store \(this one knows up to 5\)/ })
})

// Each as the version table can be made to hold it: the column's NOT NULL dropped, its type changed.
const ODD_VERSIONS: ReadonlyArray<[string, string, string]> = [
  ['negative', 'UPDATE plants_schema_version SET version = -1', '-1'],
  ['huge, past any release', 'UPDATE plants_schema_version SET version = 2000000', '2000000'],
  ['null', 'ALTER TABLE plants_schema_version ALTER COLUMN version DROP NOT NULL; UPDATE plants_schema_version SET version = NULL', 'null'],
  ['not a whole number', 'ALTER TABLE plants_schema_version ALTER COLUMN version TYPE numeric; UPDATE plants_schema_version SET version = 2.5', '"2.5"'],
  ['not a number', 'ALTER TABLE plants_schema_version ALTER COLUMN version TYPE text; UPDATE plants_schema_version SET version = \'two\'', '"two"']
]

for (const [kind, sql, shown] of ODD_VERSIONS) {
  t.test(`a version row that is ${kind}: refused at open with one line naming the table and what to do; left as it was`, { skip: pgSkip }, async (t) => {
    const url = await freshDatabase(t)
    await (await openPostgresStore(url)).close()
    await sqlOn(url, sql)
    const before = await sqlOn(url, 'SELECT version::text FROM plants_schema_version')
    await t.rejects(openPostgresStore(url), {
      message: `plant-store: the PostgreSQL table "public"."plants_schema_version": schema version ${shown} is not one plant-store writes ` +
        `(a whole number, ${SCHEMA_VERSION} for this release): it was set by hand or by another program; if the data is plant-store's, ` +
        'UPDATE "public"."plants_schema_version" SET version to the version its tables are at, or restore a backup'
    })
    t.strictSame(await sqlOn(url, 'SELECT version::text FROM plants_schema_version'), before, 'the record is left as it was')
  })
}

t.test('a table that is not the store\'s is refused, and nothing is written beside it', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await sqlOn(url, 'CREATE TABLE plants (sku text PRIMARY KEY)')
  await t.rejects(openPostgresStore(url), { message: /^plant-store: the PostgreSQL table public\.plants is not one plant-store can use/ })
  t.strictSame(await sqlOn(url, "SELECT to_regclass('plants_schema_version') AS version_table, to_regproc('plants_schema_fence') AS fence"),
    [{ version_table: null, fence: null }])
})

t.test('a database the release before versions wrote, its plants table another role\'s: served as it is (no version, no fence), its outbox made unfenced',
  { skip: pgSkip }, async (t) => {
    const { admin, role, url } = await ownedByAnotherRole(t)
    // The store's role may make tables, but not a trigger on a table it does not own.
    await sqlOn(admin, `GRANT CREATE ON SCHEMA public TO ${role}; GRANT UPDATE ON plants TO ${role}`)
    const store = await openPostgresStore(url) as Awaited<ReturnType<typeof openPostgresStore>> & OutboxStore
    t.teardown(() => store.close())
    const outbox = await store.openOutbox({ endpoints: [{ name: 'e', events: ['plant.created'] }], payloads: eventPayloads })
    await store.create({ id: 1n, name: 'kept' })
    t.equal((await outbox.claim([{ endpoint: 'e', limit: 10 }], 60_000)).length, 1, 'its create\'s event is delivered')
    // No revision column there: its plants have no revision (no ETag), update works, and no precondition matches.
    t.equal(revisionOf((await store.get(1n))!), undefined, 'no revision')
    t.equal(await store.update(1n, { name: 'renamed' }, { ifRevision: ['0'] }), 'precondition-failed')
    t.equal(await store.delete(1n, { ifRevision: ['0'] }), 'precondition-failed')
    const renamed = await store.update(1n, { name: 'renamed' })
    t.strictSame(renamed, { name: 'renamed' })
    t.equal(revisionOf(renamed as { name: string }), undefined)
    t.strictSame(await sqlOn(admin, "SELECT to_regclass('plants_schema_version') AS version, count(*)::int AS fences FROM pg_trigger WHERE tgname = 'plant_store_schema_fence'"),
      [{ version: null, fences: 0 }], 'no version recorded, no fence')
    // Its outbox as a release before the feed left it (no feed table): no step runs there, the outbox makes the feed's.
    await sqlOn(admin, 'DROP TABLE plants_webhook_feed')
    const again = await openPostgresStore(url) as Awaited<ReturnType<typeof openPostgresStore>> & OutboxStore
    t.teardown(() => again.close())
    const reopened = await again.openOutbox({ endpoints: [], payloads: eventPayloads, feed: true })
    t.equal(typeof (await reopened.readFeed(undefined, 10)).id, 'string', 'the feed\'s table made again, its identity new')
  })
