import pg from 'pg'
import { FIRST_REVISION_SQL } from '../revision.js'

/** Where the PostgreSQL store keeps its plants: a table, in a schema or else on the search_path. */
export interface TableName {
  schema?: string
  table: string
}

export const DEFAULT_TABLE = 'plants'

/** The name as SQL: each part quoted, so that it means exactly what was given. */
export const sqlName = ({ schema, table }: TableName) =>
  schema === undefined ? pg.escapeIdentifier(table) : `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`

export const createTableSql = (name: TableName) =>
  `CREATE TABLE IF NOT EXISTS ${sqlName(name)} (id int8 PRIMARY KEY, name text NOT NULL, tag text)`

// The columns the store reads and writes, with the types it binds and reads back; tag must take NULL.
const COLUMNS: ReadonlyArray<[string, string]> = [['id', 'bigint'], ['name', 'text'], ['tag', 'text']]
// Added by schema version 4: a table of a release before it, served as it is where the role may not
// upgrade it, has none (its plants then have no revision, and no ETag).
const REVISION: [string, string] = ['revision', 'bigint']

/**
 * Schema version 4: each plant's revision, which its ETag gives (0 in the rows before it; a new
 * row's is random, and each update adds 1). Added with a constant default (no rewrite of the
 * table), then given its random one.
 */
export const revisionColumnSql = (name: TableName) => [
  `ALTER TABLE ${sqlName(name)} ADD COLUMN IF NOT EXISTS revision int8 NOT NULL DEFAULT 0`,
  `ALTER TABLE ${sqlName(name)} ALTER COLUMN revision SET DEFAULT ${FIRST_REVISION_SQL}`
]

/** Schema version 4's index, which lists a tag's plants in id order: its name, unquoted. */
export const tagIndexName = (name: TableName) => `${name.table}_tag_id`

/** The tag index; `concurrently` (outside a transaction), writes go on while it is built. */
export const tagIndexSql = (name: TableName, concurrently = false) =>
  `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${pg.escapeIdentifier(tagIndexName(name))} ON ${sqlName(name)} (tag, id)`

/** Schema version 4 as a fresh database has it: the revision column and the tag index. */
export const revisionAndTagIndexSql = (name: TableName) => [...revisionColumnSql(name), tagIndexSql(name)]

/** The name of the store's own trigger (schema-version.ts's fence), the one a table of the store may have. */
export const FENCE_TRIGGER = 'plant_store_schema_fence'

/** What the catalog says of the table, in one round trip: everything the store relies on. */
export const TABLE_SHAPE_SQL = `SELECT n.nspname AS schema, c.relkind::text AS kind,
  has_table_privilege(c.oid, 'SELECT') AS can_select,
  has_table_privilege(c.oid, 'INSERT') AS can_insert,
  has_table_privilege(c.oid, 'DELETE') AS can_delete,
  (SELECT coalesce(json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'notNull', a.attnotnull)
    ORDER BY a.attnum), '[]') FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
  (SELECT coalesce(json_agg(a.attname ORDER BY a.attname), '[]') FROM pg_index i
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
    WHERE i.indrelid = c.oid AND i.indisprimary) AS primary_key,
  (SELECT coalesce(json_agg(con.conname ORDER BY con.conname), '[]') FROM pg_constraint con
    WHERE con.conrelid = c.oid AND con.contype NOT IN ('p', 'n')) AS constraints,
  (SELECT coalesce(json_agg(ic.relname ORDER BY ic.relname), '[]') FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
    WHERE i.indrelid = c.oid AND i.indisunique AND NOT i.indisprimary
    AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid)) AS unique_indexes,
  (SELECT coalesce(json_agg(t.tgname ORDER BY t.tgname), '[]') FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = c.oid AND NOT t.tgisinternal
    AND NOT (t.tgname = '${FENCE_TRIGGER}' AND p.proname = c.relname || '_schema_fence' AND p.pronamespace = c.relnamespace)) AS triggers,
  (SELECT coalesce(json_agg(r.rulename ORDER BY r.rulename), '[]') FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN') AS rules,
  c.relrowsecurity AS row_security,
  (SELECT coalesce(json_agg(p.polname ORDER BY p.polname), '[]') FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`

export interface TableShape {
  schema: string
  kind: string
  can_select: boolean
  can_insert: boolean
  can_delete: boolean
  columns: Array<{ name: string, type: string, notNull: boolean }>
  primary_key: string[]
  constraints: string[]
  /** Unique indexes besides the primary key's and a constraint's (named among the constraints). */
  unique_indexes: string[]
  /** Triggers but the store's own fence. */
  triggers: string[]
  rules: string[]
  row_security: boolean
  policies: string[]
}

const list = (names: string[]) => names.join(', ')

/** What makes `shape` unusable for the store, each in a few words; none when it is the store's table. */
export function shapeProblems (shape: TableShape): string[] {
  if (shape.kind !== 'r' && shape.kind !== 'p') return ['it is not a table (a view or another kind of relation)']
  const problems: string[] = []
  const columns = new Map(shape.columns.map((column) => [column.name, column]))
  for (const [name, type] of [...COLUMNS, REVISION]) {
    const column = columns.get(name)
    if (column === undefined) {
      if (name !== REVISION[0]) problems.push(`it has no column ${name}`)
    } else if (column.type !== type) problems.push(`column ${name} is ${column.type}, not ${type}`)
  }
  if (columns.get('tag')?.notNull) problems.push('column tag is NOT NULL, and a plant may have no tag')
  const others = shape.columns.map(({ name }) => name).filter((name) => ![...COLUMNS, REVISION].some(([known]) => known === name))
  if (others.length > 0) problems.push(`it has other columns (${list(others)})`)
  if (shape.primary_key.join() !== 'id') {
    problems.push(shape.primary_key.length === 0 ? 'it has no primary key' : `its primary key is (${list(shape.primary_key)}), not (id)`)
  }
  if (shape.constraints.length > 0) problems.push(`it has constraints of its own (${list(shape.constraints)})`)
  // Each can refuse a create, store it elsewhere or under another id, or drop it without a word.
  if (shape.unique_indexes.length > 0) problems.push(`it has unique indexes of its own (${list(shape.unique_indexes)})`)
  if (shape.triggers.length > 0) problems.push(`it has triggers (${list(shape.triggers)})`)
  if (shape.rules.length > 0) problems.push(`it has rules (${list(shape.rules)})`)
  if (shape.row_security) problems.push(`row-level security is on for it (policies: ${list(shape.policies)})`)
  const granted = { SELECT: shape.can_select, INSERT: shape.can_insert, DELETE: shape.can_delete }
  const denied = Object.entries(granted).flatMap(([privilege, yes]) => yes ? [] : [privilege])
  if (denied.length > 0) problems.push(`the database user may not ${list(denied)} on it`)
  return problems
}

/** The table is not one the store can use: a setting to fix (at start) or an outage (later): never a 500. */
export class TableShapeError extends Error {
  override name = 'TableShapeError'
}

/** The one log line (and start-up refusal) that says what is wrong with the table and what to do. */
export function tableShapeError (name: TableName, schema: string, problems: string[]): TableShapeError {
  return new TableShapeError(`plant-store: the PostgreSQL table ${schema}.${name.table} is not one plant-store can use: ` +
    `${problems.join('; ')}. Fix the table, or give plant-store a table of its own with the postgres.schema or postgres.table option`)
}
