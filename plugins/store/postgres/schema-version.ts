import { newerSchema } from '../schema-version.js'
import { sqlName, TableShapeError, type TableName } from './table.js'

/**
 * The schema version this release writes: the count of its migrations (1: the plants table, with
 * the outbox tables made when webhooks are first configured).
 */
export const SCHEMA_VERSION = 1

/** The version of a database with a plants table and no record: the release before versions wrote it. */
export const UNRECORDED_VERSION = 1

/** Beside the plants table and named after it, as the outbox tables are; one row. */
export const versionTable = (plants: TableName) => sqlName({ schema: plants.schema, table: `${plants.table}_schema_version` })

export const createVersionTableSql = (plants: TableName) =>
  `CREATE TABLE IF NOT EXISTS ${versionTable(plants)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), version int4 NOT NULL)`

/** Records this release's version; a higher one recorded is kept (never lowered). */
export const recordVersionSql = (plants: TableName) => {
  const table = versionTable(plants)
  return `INSERT INTO ${table} AS v (version) VALUES (${SCHEMA_VERSION}) ON CONFLICT (one) DO UPDATE SET version = excluded.version
    WHERE v.version < excluded.version`
}

/** The version recorded (null when the table is empty), asked only when the table is there. */
export const recordedVersionSql = (plants: TableName) => `SELECT (SELECT version FROM ${versionTable(plants)}) AS version`

/** The start-up refusal (and log line) for a database a newer release wrote. */
export const newerSchemaError = (plants: TableName, version: number) =>
  new TableShapeError(`plant-store: the PostgreSQL table ${versionTable(plants)}: ${newerSchema(version, SCHEMA_VERSION)}`)

/** The refusal when the database user may not make or upgrade the tables: what an administrator runs. */
export const privilegeError = (cause: Error) =>
  new TableShapeError(`plant-store: the PostgreSQL tables cannot be made or upgraded by the database user (${cause.message}): ` +
    'have an administrator run the SQL that `node server.mjs schema-sql` prints, then start plant-store again', { cause })
