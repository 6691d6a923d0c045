import {
  createOutboxSql, createTableSql, createVersionTableSql, DEFAULT_TABLE, outboxFenceSql, outboxTables, plantsFenceSql, recordVersionSql, revisionAndTagIndexSql,
  type TableName
} from '../../src/postgres-schema.js'

/**
 * Every statement the store runs to make its tables at the current schema version (the plants, its
 * schema version and, with webhooks on, the outbox, the fence on them) and to upgrade older ones,
 * then the version record, as one script: for a database administrator to run once when the
 * service's role may not CREATE, and again to upgrade when a new release says so.
 */
export function schemaSql (name: TableName = { table: DEFAULT_TABLE }): string {
  const outbox = outboxTables(name)
  return [
    createTableSql(name), ...revisionAndTagIndexSql(name), createVersionTableSql(name), ...createOutboxSql(outbox, name), ...plantsFenceSql(name), ...outboxFenceSql(outbox, name),
    recordVersionSql(name)
  ].map((statement) => `${statement.replace(/\n\s+/g, '\n  ')};\n`).join('')
}
