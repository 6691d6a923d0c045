import {
  createOutboxSql, createTableSql, createVersionTableSql, DEFAULT_TABLE, outboxTables, recordVersionSql, type TableName
} from '../../src/service-api.js'

/**
 * Every statement the store runs to make its tables (the plants, its schema version and, with
 * webhooks on, the outbox), as one script: for a database administrator to run once when the
 * service's role may not CREATE, and again to upgrade when a new release says so.
 */
export function schemaSql (name: TableName = { table: DEFAULT_TABLE }): string {
  return [createTableSql(name), createVersionTableSql(name), recordVersionSql(name), ...createOutboxSql(outboxTables(name), name)]
    .map((statement) => `${statement.replace(/\n\s+/g, '\n  ')};\n`).join('')
}
