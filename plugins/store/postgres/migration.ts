import pg from 'pg'
import { ignore, query } from './connection.js'
import { PostgresFailure } from './failures.js'
import { outboxNames } from './outbox.js'
import {
  createFenceFunctionSql, createVersionTableSql, POSTGRES_STEPS, privilegeError, readVersion, recordedVersionSql, recordVersionSql, SCHEMA_VERSION, UNRECORDED_VERSION,
  versionTable, type StepContext
} from './schema-version.js'
import { tagIndexRegclass, tagIndexValid } from './tag-index.js'
import { shapeProblems, sqlName, TABLE_SHAPE_SQL, tableShapeError, type TableName, type TableShape } from './table.js'

// SQLSTATE: the database user lacks a privilege (CREATE on the schema, SELECT on a table...).
const INSUFFICIENT_PRIVILEGE = '42501'
// An upgrade waits this long for the writes in flight on the tables it locks (the store's pool
// gives up on a lock after 300 ms): they end within milliseconds, but a loaded server is slow.
const UPGRADE_LOCK_MS = 3000

/** Throws a `table` failure when the table is not one the store can use (a `schema` one when it is gone). */
export async function checkShape (client: pg.PoolClient, name: TableName) {
  const { rows: [shape] } = await query<TableShape>(client, TABLE_SHAPE_SQL, [sqlName(name)])
  // Gone since the migration or the ping's read of it (dropped meanwhile): made again, as for 42P01.
  /* c8 ignore next */
  if (shape === undefined) throw new PostgresFailure('schema', new Error(`the table ${sqlName(name)} is gone`))
  const problems = shapeProblems(shape)
  if (problems.length > 0) throw new PostgresFailure('table', tableShapeError(name, shape.schema, problems))
}

/** What a migration found: whether the version is recorded (the probe reads it then). */
export interface Migrated {
  versioned: boolean
  /** The plants table has its revision column (version 4 on): a table served as it is where it could not be upgraded may not. */
  revisions: boolean
  /** Version 4's tag index is there and valid (on a table that had plants, it is built after the migration). */
  tagIndex: boolean
}

/**
 * Brings the database to this release's schema version (schema-version.ts's steps, from the one
 * recorded), the plants table made when missing and checked to be one the store can use first. A
 * database a newer release wrote, or whose version no release writes, is refused. A table named
 * without a schema is given the one the search_path gives it now, for good: a search_path changed
 * later (another `plants` put first) does not move the store.
 */
export async function migrate (client: pg.PoolClient, name: TableName, makeSchema: boolean): Promise<Migrated> {
  if (name.schema === undefined) {
    const { rows: [{ schema }] } = await query<{ schema: string }>(client, "SELECT coalesce(current_schema(), 'public') AS schema")
    name.schema = schema
  }
  await client.query('BEGIN')
  try {
    // Instances starting together take turns; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    const outbox = outboxNames(name)
    const names = [sqlName(name), versionTable(name), outbox.events, outbox.deliveries, outbox.endpoints]
    const { rows } = await query<{ name: string }>(client, 'SELECT name FROM unnest($1::text[]) AS t(name) WHERE to_regclass(name) IS NOT NULL', [names])
    const present = new Set(rows.map((row) => row.name))
    const versioned = present.has(versionTable(name))
    const recorded = versioned ? (await query<{ version: string | null }>(client, recordedVersionSql(name))).rows[0] : undefined
    const read = recorded === undefined ? { version: present.has(sqlName(name)) ? UNRECORDED_VERSION : 0 } : readVersion(name, recorded.version)
    if ('refusal' in read) throw new PostgresFailure(read.newer ? 'newer' : 'table', read.refusal)
    const context: StepContext = { client, tables: { plants: name, ...outbox }, present, makeSchema }
    // Made first when missing (and so checked by its maker): nothing is written beside a table that is not the store's (a host's own `plants`).
    if (!present.has(sqlName(name))) await POSTGRES_STEPS[0](context)
    await checkShape(client, name)
    const from = present.has(sqlName(name)) ? read.version : 1
    if (from < SCHEMA_VERSION || recorded === undefined) {
      // Lenient for a database the release before versions wrote (served as it is where it cannot be upgraded).
      if (versioned || !present.has(sqlName(name))) await upgrade(context, from)
      else await upgradeIfAllowed(context, from)
    }
    await client.query('COMMIT')
    const { rows: [after] } = await query<Migrated>(client, `SELECT to_regclass($1) IS NOT NULL AS versioned,
      EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($2) AND attname = 'revision' AND NOT attisdropped) AS revisions,
      ${tagIndexValid('$3')} AS "tagIndex"`, [versionTable(name), sqlName(name), tagIndexRegclass(name)])
    return after
  } catch (error) {
    await client.query('ROLLBACK').catch(ignore)
    throw (error as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE ? new PostgresFailure('table', privilegeError(error as Error)) : error
  }
}

/**
 * Runs the steps after version `from` and records the version, making its table when missing. The
 * tables written are locked first: a write waiting for them takes its snapshot once the upgrade has
 * committed, so it sees the new version (and the fence refuses it when its release is older).
 */
async function upgrade (context: StepContext, from: number) {
  const { client, tables, present } = context
  if (from < SCHEMA_VERSION) {
    const written = [sqlName(tables.plants), tables.deliveries, tables.endpoints].filter((table) => present.has(table))
    await client.query(`SET LOCAL lock_timeout = '${UPGRADE_LOCK_MS}ms'; SET LOCAL statement_timeout = '${UPGRADE_LOCK_MS + 500}ms'`)
    if (written.length > 0) await client.query(`LOCK TABLE ${written.join(', ')} IN SHARE ROW EXCLUSIVE MODE`)
    for (const step of POSTGRES_STEPS.slice(from)) await step(context)
  }
  // The fence knows the version recorded: made again with it, in the same transaction.
  for (const statement of [createFenceFunctionSql(tables.plants), createVersionTableSql(tables.plants), recordVersionSql(tables.plants)]) {
    await client.query(statement)
  }
}

/**
 * A database the release before versions wrote is at version 1: when the user may not upgrade it
 * (nor make the version's table), it is served as it is, and a later start tries again.
 */
async function upgradeIfAllowed (context: StepContext, from: number) {
  await context.client.query('SAVEPOINT upgrade')
  try {
    await upgrade(context, from)
  } catch {
    await context.client.query('ROLLBACK TO SAVEPOINT upgrade')
  }
}
