/**
 * The schema moves with its version. A fresh database's schema (SQLite: its tables' columns and
 * kinds and its indexes; PostgreSQL: the plant-store tables' columns, indexes, constraints, triggers
 * and the fence's function) is fingerprinted and compared with the fingerprint recorded here for
 * the version the code writes: a change to the DDL without a new version step fails here. A new
 * step records its version's fingerprint below (the failure prints it). And a database of each
 * older release, upgraded step by step, has the very schema of a fresh one.
 */
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openStore } from '../../plugins/store/index.js'
import type { OutboxStore } from '../../plugins/store/outbox.js'
import { SCHEMA_VERSION } from '../../plugins/store/postgres/schema-version.js'
import { SQLITE_SCHEMA_VERSION } from '../../plugins/store/sqlite/schema-version.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import {
  FENCED_POSTGRES_DDL, FENCED_SQLITE_DDL, LANDED_POSTGRES_DDL, LANDED_SQLITE_DDL, PREVIOUS_POSTGRES_DDL, PREVIOUS_SQLITE_DDL, REVISED_POSTGRES_DDL, REVISED_SQLITE_DDL
} from '../helpers/previous-release.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

/** Each version's fingerprint, from its first release on; a new step adds its own. */
const SQLITE_FINGERPRINTS: Record<number, string> = {
  2: '1a621fdfd362f1e1',
  3: 'c01bcfc3d04c5ae3',
  4: 'e8e52518b522ace3'
}
const POSTGRES_FINGERPRINTS: Record<number, string> = {
  3: '8235ec1ce84ddb8c',
  4: '5683a3c5cf18a3c6',
  5: '2c40a1e23f6669fb'
}

const OLDER = [['the release before the landed one', PREVIOUS_SQLITE_DDL, PREVIOUS_POSTGRES_DDL], ['the landed release', LANDED_SQLITE_DDL, LANDED_POSTGRES_DDL],
  ['the release before revisions', FENCED_SQLITE_DDL, FENCED_POSTGRES_DDL], ['the release before the change feed', REVISED_SQLITE_DDL, REVISED_POSTGRES_DDL]] as const
const fingerprintOf = (schema: unknown) => createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 16)

/** The store at `url` opened with webhooks (their tables are part of the schema), then closed. */
async function openedWithOutbox (url: string) {
  const store = await openStore(url) as PlantStore & OutboxStore
  await store.openOutbox({ endpoints: [{ name: 'e', events: ['plant.created'] }], payloads: eventPayloads })
  await store.close()
}

/** What a file's schema is, whatever text made it: each table's kind and columns, each index's definition, the version. */
function sqliteSchema (file: string) {
  const db = new Database(file, { readonly: true })
  try {
    const tables = db.prepare('SELECT name, strict, wr FROM pragma_table_list WHERE schema = \'main\' AND name NOT LIKE \'sqlite_%\' ORDER BY name').all() as Array<{ name: string }>
    return {
      version: db.pragma('user_version', { simple: true }),
      tables: tables.map((table) => ({ ...table, columns: db.prepare('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?)').all(table.name) })),
      // Normalized: the text an index was made with is kept as it was written.
      indexes: (db.prepare('SELECT name, sql FROM sqlite_master WHERE type = \'index\' AND sql IS NOT NULL ORDER BY name').all() as Array<{ name: string, sql: string }>)
        .map(({ name, sql }) => ({ name, sql: sql.replace(/\s+/g, ' ').replace(/ IF NOT EXISTS/i, '') }))
    }
  } finally {
    db.close()
  }
}

const POSTGRES_SCHEMA_SQL = `SELECT
  (SELECT version FROM plants_schema_version) AS version,
  (SELECT json_agg(json_build_object('table', table_name, 'column', column_name, 'type', data_type, 'nullable', is_nullable,
    'default', column_default, 'identity', is_identity) ORDER BY table_name, ordinal_position)
    FROM information_schema.columns WHERE table_schema = 'public') AS columns,
  (SELECT json_agg(json_build_object('name', indexname, 'def', indexdef) ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public') AS indexes,
  (SELECT json_agg(json_build_object('table', conrelid::regclass::text, 'def', pg_get_constraintdef(oid)) ORDER BY conrelid::regclass::text, conname)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace) AS constraints,
  (SELECT json_agg(pg_get_triggerdef(oid) ORDER BY tgrelid::regclass::text, tgname) FROM pg_trigger WHERE NOT tgisinternal) AS triggers,
  (SELECT json_agg(json_build_object('name', proname, 'source', md5(prosrc)) ORDER BY proname) FROM pg_proc WHERE pronamespace = 'public'::regnamespace) AS functions`

t.test('SQLite: a fresh file has the schema recorded for its version, and each older release\'s file upgraded has the same', async (t) => {
  const dir = t.testdir()
  const fresh = join(dir, 'fresh.db')
  await openedWithOutbox(`sqlite:${fresh}`)
  const schema = sqliteSchema(fresh)
  t.equal(fingerprintOf(schema), SQLITE_FINGERPRINTS[SQLITE_SCHEMA_VERSION],
    `the schema of version ${SQLITE_SCHEMA_VERSION} is the one recorded: a change to it needs a version step (and its fingerprint here)`, { schema })
  for (const [release, ddl] of OLDER) {
    const file = join(dir, `${release}.db`)
    const db = new Database(file)
    db.exec(ddl)
    db.close()
    await openedWithOutbox(`sqlite:${file}`)
    t.strictSame(sqliteSchema(file), schema, `a file of ${release}, upgraded, has the schema of a fresh one`)
  }
})

t.test('PostgreSQL: a fresh database has the schema recorded for its version, and each older release\'s database upgraded has the same',
  { skip: await postgresSkip() }, async (t) => {
    const fresh = await freshDatabase(t)
    await openedWithOutbox(fresh)
    const [schema] = await sqlOn(fresh, POSTGRES_SCHEMA_SQL)
    t.equal(fingerprintOf(schema), POSTGRES_FINGERPRINTS[SCHEMA_VERSION],
      `the schema of version ${SCHEMA_VERSION} is the one recorded: a change to it needs a version step (and its fingerprint here)`, { schema })
    for (const [release, , ddl] of OLDER) {
      const url = await freshDatabase(t)
      await sqlOn(url, ddl)
      await openedWithOutbox(url)
      t.strictSame((await sqlOn(url, POSTGRES_SCHEMA_SQL))[0], schema, `a database of ${release}, upgraded, has the schema of a fresh one`)
    }
  })
