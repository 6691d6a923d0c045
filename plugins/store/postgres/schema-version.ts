import pg from 'pg'
import { newerSchema, oddSchema, versionKind } from '../schema-version.js'
import { feedTablesSql } from './feed-sql.js'
import { createTableSql, FENCE_TRIGGER, revisionColumnSql, sqlName, tagIndexSql, TableShapeError, type TableName } from './table.js'

/** Beside the plants table and named after it, as the outbox tables are; one row. */
export const versionTable = (plants: TableName) => sqlName({ schema: plants.schema, table: `${plants.table}_schema_version` })

export const createVersionTableSql = (plants: TableName) =>
  `CREATE TABLE IF NOT EXISTS ${versionTable(plants)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), version int4 NOT NULL)`

/** The store's tables that a step may find: the plants table, and the outbox's when webhooks made them. */
export interface StoreTables {
  plants: TableName
  events: string
  deliveries: string
  endpoints: string
  feed: string
}

/** What a step runs on: a connection inside the migration's transaction, and which outbox tables exist. */
export interface StepContext {
  client: pg.PoolClient
  tables: StoreTables
  /** The outbox tables there (by their SQL names): a step changes them only where they exist. */
  present: ReadonlySet<string>
  /** The table's schema was named in the options: made when missing. */
  makeSchema: boolean
}

// The fence: a trigger on each table plant-store writes. A statement of this release opens with the
// version it knows (FENCE_MARK); one that knows an older version than the fence's, or declares none
// and names the tables as plant-store always has ("schema"."table", the statements of releases
// before the fence), is refused with FENCE_SQLSTATE. So an older release still running writes
// nothing once a newer one has upgraded the schema: it takes the refusal for a table to check again,
// and that check finds the newer version. Statements written by hand (unquoted names) pass. The
// fence holds the version as a constant, made again by each upgrade in the transaction that
// records the version (migration.ts): reading the version table and a regular expression cost a
// statement 45 µs, this 16 µs.
export const FENCE_SQLSTATE = 'PSNEW'
const MARK_HEAD = '/* plant-store schema '
/** The fence's function, beside the plants table and named after it. */
export const fenceFunction = (plants: TableName) => sqlName({ schema: plants.schema, table: `${plants.table}_schema_fence` })

/** The fence's function for `version` (this release's, or a newer one's in a test). */
export function createFenceFunctionSql (plants: TableName, version = SCHEMA_VERSION) {
  const named = pg.escapeLiteral(`${sqlName(plants).slice(0, -1)}`)
  return `CREATE OR REPLACE FUNCTION ${fenceFunction(plants)}() RETURNS trigger LANGUAGE plpgsql AS $fence$
DECLARE
  statement text := current_query();
  knows int4 := CASE WHEN left(statement, ${MARK_HEAD.length}) = '${MARK_HEAD}'
    THEN split_part(substr(statement, ${MARK_HEAD.length + 1}, 11), ' ', 1)::int4 ELSE 0 END;
BEGIN
  IF knows < ${version} AND (knows > 0 OR position(${named} in statement) > 0) THEN
    RAISE EXCEPTION 'plant-store schema version ${version} was written by a newer plant-store (this statement knows %)', knows
      USING ERRCODE = '${FENCE_SQLSTATE}', DETAIL = '${version}';
  END IF;
  RETURN NULL;
END $fence$`
}

/** The fence on one table: before each statement that writes it. */
export const fenceTriggerOn = (plants: TableName, table: string) => [
  `DROP TRIGGER IF EXISTS ${FENCE_TRIGGER} ON ${table}`,
  `CREATE TRIGGER ${FENCE_TRIGGER} BEFORE INSERT OR UPDATE OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${fenceFunction(plants)}()`
]

/** The fence's function and its trigger on the plants table. */
export const plantsFenceSql = (plants: TableName) => [createFenceFunctionSql(plants), ...fenceTriggerOn(plants, sqlName(plants))]

const run = async (client: pg.PoolClient, statements: string[]) => { for (const statement of statements) await client.query(statement) }

/**
 * The trace_context column, added to an events table an earlier release made without it (NULL in
 * its rows: no trace to link to). A role that may not alter the table is told what to run.
 */
export async function addTraceContext (client: pg.PoolClient, events: string): Promise<void> {
  const { rows: [{ present, owner }] } = await client.query<{ present: boolean, owner: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_attribute
    WHERE attrelid = to_regclass($1) AND attname = 'trace_context' AND NOT attisdropped) AS present,
    pg_has_role((SELECT relowner FROM pg_class WHERE oid = to_regclass($1)), 'USAGE') AS owner`, [events])
  if (present) return
  const statement = addTraceContextSql(events)
  // Only the table's owner may alter it.
  if (!owner) throw new Error(`the webhook events table needs a column this release adds, and this role may not add it: run \`${statement}\` as its owner`)
  await client.query(statement)
}

export const addTraceContextSql = (events: string) => `ALTER TABLE ${events} ADD COLUMN IF NOT EXISTS trace_context text`

/**
 * The schema's steps, in order: step n takes a database from version n - 1 to n, and the version
 * table records the last one applied. Every change to the schema is a new step at the end (a test
 * compares a fresh database's schema with the one recorded for its version); each is idempotent,
 * for version 1 was written both with and without the trace_context column. The outbox tables are
 * made when webhooks are first configured, at the current version (outbox.ts): a step changes them
 * only where they exist.
 */
export const POSTGRES_STEPS: ReadonlyArray<(context: StepContext) => Promise<void>> = [
  // 1: the plants table. Run only when it is missing (migration.ts): CREATE ... IF NOT EXISTS would need the CREATE privilege even then.
  async ({ client, tables: { plants }, makeSchema }) => {
    if (makeSchema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(plants.schema!)}`)
    await client.query(createTableSql(plants))
  },
  // 2: each event keeps the trace context of its create or delete.
  async ({ client, tables, present }) => {
    if (present.has(tables.events)) await addTraceContext(client, tables.events)
  },
  // 3: the fence: an older release still running writes nothing once a newer one has upgraded the schema.
  async ({ client, tables, present }) => {
    await run(client, plantsFenceSql(tables.plants))
    for (const table of [tables.deliveries, tables.endpoints]) if (present.has(table)) await run(client, fenceTriggerOn(tables.plants, table))
  },
  // 4: each plant's revision (its ETag), and the index of a tag's plants in id order. That index is
  // made here on an empty table only: on one with plants, it is built after the migration,
  // concurrently and without its time bound (tag-index.ts), for on a large table it takes minutes.
  async ({ client, tables: { plants } }) => {
    await run(client, revisionColumnSql(plants))
    const { rows: [{ empty }] } = await client.query<{ empty: boolean }>(`SELECT NOT EXISTS (SELECT 1 FROM ${sqlName(plants)}) AS empty`)
    if (empty) await client.query(tagIndexSql(plants))
  },
  // 5: the change feed: each event's transaction id (the feed's order) and the feed's identity, beside the events.
  async ({ client, tables, present }) => {
    if (present.has(tables.events)) await run(client, feedTablesSql(tables, tables.plants))
  }
]

/** The schema version this release writes: its last step's. */
export const SCHEMA_VERSION = POSTGRES_STEPS.length

/** The version of a database with a plants table and no record: the release before versions wrote it. */
export const UNRECORDED_VERSION = 1

/** Opens each statement that writes a fenced table: the version this release knows, for the fence to compare. */
export const FENCE_MARK = `${MARK_HEAD}${SCHEMA_VERSION} */ `

/** Records this release's version; a higher one recorded is kept (never lowered). */
export const recordVersionSql = (plants: TableName) => {
  const table = versionTable(plants)
  return `INSERT INTO ${table} AS v (version) VALUES (${SCHEMA_VERSION}) ON CONFLICT (one) DO UPDATE SET version = excluded.version
    WHERE v.version < excluded.version`
}

/** The version recorded, as text whatever the column's type now (no row: none), asked only when the table is there. */
export const recordedVersionSql = (plants: TableName) => `SELECT version::text AS version FROM ${versionTable(plants)} LIMIT 1`

/** A version newer than this release's, found in the record (at start: the refusal, and its line). */
export class NewerSchemaFound extends TableShapeError {
  constructor (message: string, readonly version: number) {
    super(message)
  }
}

/** What a recorded version means: a version number, or the refusal (and log line) for one this release cannot serve. */
export function readVersion (plants: TableName, recorded: string | null): { version: number } | { refusal: TableShapeError, newer: boolean } {
  const integral = recorded !== null && /^-?[0-9]{1,10}$/.test(recorded)
  const version = integral ? Number(recorded) : Number.NaN
  const kind = versionKind(version, SCHEMA_VERSION)
  if (kind === 'known') return { version }
  const why = kind === 'newer'
    ? newerSchema(version, SCHEMA_VERSION)
    : oddSchema(integral ? recorded : JSON.stringify(recorded), SCHEMA_VERSION, `UPDATE ${versionTable(plants)} SET version`)
  const line = `plant-store: the PostgreSQL table ${versionTable(plants)}: ${why}`
  return kind === 'newer' ? { refusal: new NewerSchemaFound(line, version), newer: true } : { refusal: new TableShapeError(line), newer: false }
}

/** The refusal when the database user may not make or upgrade the tables: what an administrator runs. */
export const privilegeError = (cause: Error) =>
  new TableShapeError(`plant-store: the PostgreSQL tables cannot be made or upgraded by the database user (${cause.message}): ` +
    'have an administrator run the SQL that `node server.mjs schema-sql` prints, then start plant-store again', { cause })
