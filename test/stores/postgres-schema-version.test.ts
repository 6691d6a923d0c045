import t from 'tap'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()

const versions = (url: string) => sqlOn<{ version: number }>(url, 'SELECT version FROM plants_schema_version')

t.test('a new database: the plants table and its schema version, recorded once however often the store opens it', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  for (let run = 0; run < 2; run++) await (await openPostgresStore(url)).close()
  t.strictSame(await versions(url), [{ version: 1 }])
})

t.test('a version record emptied by hand is written again at start', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url)).close()
  await sqlOn(url, 'DELETE FROM plants_schema_version')
  await (await openPostgresStore(url)).close()
  t.strictSame(await versions(url), [{ version: 1 }])
})

t.test('a newer version is refused when the store opens, naming the table and what to do; nothing is written', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url, { table: 'garden' })).close()
  await sqlOn(url, 'UPDATE garden_schema_version SET version = 2')
  await t.rejects(openPostgresStore(url, { table: 'garden' }), {
    message: 'plant-store: the PostgreSQL table "public"."garden_schema_version": schema version 2 was written by a newer plant-store ' +
      '(this one knows up to 1): run that release, or restore a backup taken before the upgrade'
  })
  t.strictSame(await sqlOn(url, 'SELECT version FROM garden_schema_version'), [{ version: 2 }])
})

t.test('a table that is not the store\'s is refused, and nothing is written beside it', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  await sqlOn(url, 'CREATE TABLE plants (sku text PRIMARY KEY)')
  await t.rejects(openPostgresStore(url), { message: /^plant-store: the PostgreSQL table public\.plants is not one plant-store can use/ })
  t.strictSame(await sqlOn(url, "SELECT to_regclass('plants_schema_version') AS version_table"), [{ version_table: null }])
})
