import pg from 'pg'
import { ignore, query } from './connection.js'
import { PostgresFailure } from './failures.js'
import {
  createVersionTableSql, newerSchemaError, privilegeError, recordedVersionSql, recordVersionSql, SCHEMA_VERSION, UNRECORDED_VERSION, versionTable
} from './schema-version.js'
import { createTableSql, shapeProblems, sqlName, TABLE_SHAPE_SQL, tableShapeError, type TableName, type TableShape } from './table.js'

// SQLSTATE: the database user lacks a privilege (CREATE on the schema, SELECT on a table...).
const INSUFFICIENT_PRIVILEGE = '42501'

/** Throws a `table` failure when the table is not one the store can use (a `schema` one when it is gone). */
export async function checkShape (client: pg.PoolClient, name: TableName) {
  const { rows: [shape] } = await query<TableShape>(client, TABLE_SHAPE_SQL, [sqlName(name)])
  // Gone since the migration or the ping's read of it (dropped meanwhile): made again, as for 42P01.
  /* c8 ignore next */
  if (shape === undefined) throw new PostgresFailure('schema', new Error(`the table ${sqlName(name)} is gone`))
  const problems = shapeProblems(shape)
  if (problems.length > 0) throw new PostgresFailure('table', tableShapeError(name, shape.schema, problems))
}

/**
 * Creates the table (and its schema, when the options name one) when it is not there, checks that
 * it is one the store can use, then records the schema version (schema-version.ts). A database a
 * newer release wrote is refused. A table named without a schema is given the one the
 * search_path gives it now, for good: a search_path changed later (another `plants` put first)
 * does not move the store.
 */
export async function migrate (client: pg.PoolClient, name: TableName, makeSchema: boolean) {
  if (name.schema === undefined) {
    const { rows: [{ schema }] } = await query<{ schema: string }>(client, "SELECT coalesce(current_schema(), 'public') AS schema")
    name.schema = schema
  }
  await client.query('BEGIN')
  try {
    // Instances starting together take turns; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    const { rows: [{ present, versioned }] } = await query<{ present: boolean, versioned: boolean }>(client,
      'SELECT to_regclass($1) IS NOT NULL AS present, to_regclass($2) IS NOT NULL AS versioned', [sqlName(name), versionTable(name)])
    const recorded = versioned ? (await query<{ version: number | null }>(client, recordedVersionSql(name))).rows[0].version : null
    const version = recorded ?? (present ? UNRECORDED_VERSION : 0)
    if (version > SCHEMA_VERSION) throw new PostgresFailure('table', newerSchemaError(name, version))
    if (!present) {
      // Made only when missing: CREATE ... IF NOT EXISTS would need the CREATE privilege even then.
      if (makeSchema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(name.schema)}`)
      await client.query(createTableSql(name))
    }
    // Nothing is written beside a table that is not the store's (a host's own `plants`).
    await checkShape(client, name)
    if (recorded === null || recorded < SCHEMA_VERSION) await recordVersion(client, name, versioned, present)
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(ignore)
    throw (error as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE ? new PostgresFailure('table', privilegeError(error as Error)) : error
  }
}

/**
 * Records the schema version, making its table when missing. A database the release before
 * versions wrote is at this version already: when its record cannot be made (a user without
 * CREATE), it is served as it is, and a later release knows it for version 1 the same way.
 */
async function recordVersion (client: pg.PoolClient, name: TableName, versioned: boolean, present: boolean) {
  const statements = versioned ? [recordVersionSql(name)] : [createVersionTableSql(name), recordVersionSql(name)]
  if (!present || versioned) {
    for (const statement of statements) await client.query(statement)
    return
  }
  await client.query('SAVEPOINT record_version')
  try {
    for (const statement of statements) await client.query(statement)
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT record_version')
  }
}
