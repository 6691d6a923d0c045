/**
 * The PostgreSQL store's schema statements, for the service's `schema-sql` command: a face of its
 * own because these modules import pg, which a service on SQLite or memory must never load. Only
 * imported behind that command's dynamic import (the bundle check in scripts/bundle.mjs holds it).
 */
export { createTableSql, DEFAULT_TABLE, revisionAndTagIndexSql, type TableName } from '../plugins/store/postgres/table.js'
export { createOutboxSql, outboxFenceSql, outboxTables } from '../plugins/store/postgres/outbox.js'
export { createVersionTableSql, plantsFenceSql, recordVersionSql } from '../plugins/store/postgres/schema-version.js'
