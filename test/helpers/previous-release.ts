/**
 * What the previous landed release (git commit 8cea9fa) creates, copied from its source
 * (stores/sqlite.ts, stores/sqlite-outbox.ts, stores/postgres-table.ts, stores/postgres-outbox.ts)
 * with the default table name. Recorded here rather than built from git history: a test of
 * upgrades needs that release's data, not its code, and a build of an old commit needs its own
 * dependencies, minutes and a clone with full history.
 */
export const PREVIOUS_SQLITE_DDL = `
CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT;
PRAGMA user_version = 1;
CREATE TABLE IF NOT EXISTS webhook_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq INTEGER NOT NULL, endpoint TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, due_at INTEGER NOT NULL, claim TEXT,
  PRIMARY KEY (seq, endpoint)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (endpoint, due_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_failed ON webhook_deliveries (endpoint) WHERE state = 'failed';
CREATE TABLE IF NOT EXISTS webhook_attempts (
  seq INTEGER NOT NULL, endpoint TEXT NOT NULL, at INTEGER NOT NULL, outcome TEXT NOT NULL, status INTEGER, error TEXT, duration_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (seq, endpoint);
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  name TEXT PRIMARY KEY, enabled INTEGER NOT NULL, disabled_reason TEXT, disabled_at INTEGER, last_success_at INTEGER, failing_since INTEGER
) STRICT;
`

export const PREVIOUS_POSTGRES_DDL = `
CREATE TABLE IF NOT EXISTS "plants" (id int8 PRIMARY KEY, name text NOT NULL, tag text);
CREATE TABLE IF NOT EXISTS "plants_webhook_events" (seq int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id text NOT NULL,
  type text NOT NULL, payload text NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS "plants_webhook_deliveries" (seq int8 NOT NULL, endpoint text NOT NULL, state text NOT NULL,
  attempts int4 NOT NULL, due_at timestamptz NOT NULL, claim uuid, PRIMARY KEY (seq, endpoint));
CREATE INDEX IF NOT EXISTS "plants_webhook_pending" ON "plants_webhook_deliveries" (endpoint, due_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS "plants_webhook_failed" ON "plants_webhook_deliveries" (endpoint) WHERE state = 'failed';
CREATE TABLE IF NOT EXISTS "plants_webhook_attempts" (id int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, seq int8 NOT NULL, endpoint text NOT NULL,
  at timestamptz NOT NULL, outcome text NOT NULL, status int4, error text, duration_ms int4 NOT NULL);
CREATE INDEX IF NOT EXISTS "plants_webhook_attempts_delivery" ON "plants_webhook_attempts" (seq, endpoint);
CREATE TABLE IF NOT EXISTS "plants_webhook_endpoints" (name text PRIMARY KEY, enabled boolean NOT NULL, disabled_reason text,
  disabled_at timestamptz, last_success_at timestamptz, failing_since timestamptz);
`
