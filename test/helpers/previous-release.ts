import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFenceFunctionSql, fenceTriggerOn } from '../../plugins/store/postgres/schema-version.js'
import { revisionAndTagIndexSql } from '../../plugins/store/postgres/table.js'

/**
 * What the release before the landed one (git commit 8cea9fa) creates, copied from its source
 * (stores/sqlite.ts, stores/sqlite-outbox.ts, stores/postgres-table.ts, stores/postgres-outbox.ts)
 * with the default table name: schema version 1, the events without trace_context. Recorded here
 * rather than built from git history: a test of upgrades needs that release's data, not its code.
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

/** Version 1 as the landed release (LANDED_COMMIT) writes it: the events table with its trace_context column, the version recorded. */
const withTraceContext = (ddl: string, column: string) => {
  const landed = ddl.replace(/created_at (INTEGER|timestamptz) NOT NULL\n?\)/, (created) => `${created.slice(0, created.indexOf(' NOT NULL') + 9)}, ${column})`)
  if (landed === ddl) throw new Error('the previous release\'s events table was not found in its DDL')
  return landed
}

export const LANDED_SQLITE_DDL = withTraceContext(PREVIOUS_SQLITE_DDL, 'trace_context TEXT')

export const LANDED_POSTGRES_DDL = `${withTraceContext(PREVIOUS_POSTGRES_DDL, 'trace_context text')}
CREATE TABLE IF NOT EXISTS "plants_schema_version" (one boolean PRIMARY KEY DEFAULT true CHECK (one), version int4 NOT NULL);
INSERT INTO "plants_schema_version" (version) VALUES (1);
`

/** A pending plant.created event of plant `id` for endpoint `endpoint`, as both releases wrote them (SQLite: times in ms). */
export const pendingEventSql = (engine: 'sqlite' | 'postgres', id: string, endpoint: string) => {
  const now = engine === 'sqlite' ? String(Date.now()) : 'now()'
  const payload = `{"type":"plant.created","timestamp":"2026-11-01T00:00:00.000Z","id":${id},"name":"old ${id}"}`
  return `INSERT INTO ${engine === 'sqlite' ? 'webhook_events' : 'plants_webhook_events'} (message_id, type, payload, created_at)
    VALUES ('msg_old${id}', 'plant.created', '${payload}', ${now});
  INSERT INTO ${engine === 'sqlite' ? 'webhook_deliveries' : 'plants_webhook_deliveries'} (seq, endpoint, state, attempts, due_at)
    SELECT max(seq), '${endpoint}', 'pending', 0, ${now} FROM ${engine === 'sqlite' ? 'webhook_events' : 'plants_webhook_events'};
  INSERT INTO ${engine === 'sqlite' ? 'webhook_endpoints' : 'plants_webhook_endpoints'} (name, enabled) VALUES ('${endpoint}', ${engine === 'sqlite' ? 1 : 'true'})
    ON CONFLICT (name) DO NOTHING;`
}

/** The landed release, whose version 1 has trace_context: the previous release in a rolling upgrade to this one. */
export const LANDED_COMMIT = 'b0e41fe'

/**
 * The landed release built from this clone's history, as its own scripts/build.mjs builds it
 * (git archive, this checkout's node_modules): the path of its bundle, dist/server.mjs, or why
 * there is none (the commit is not in the clone's history). Built once per machine, under tmpdir.
 */
export function builtLandedRelease (): { server: string } | { missing: string } {
  const root = new URL('../..', import.meta.url).pathname
  try {
    execFileSync('git', ['-C', root, 'cat-file', '-e', `${LANDED_COMMIT}^{commit}`], { stdio: 'ignore' })
  } catch {
    return { missing: `the landed release ${LANDED_COMMIT} is not in this clone's history (a shallow clone?): fetch it to run this test` }
  }
  const folder = join(tmpdir(), `plant-store-release-${LANDED_COMMIT}`)
  const server = join(folder, 'dist', 'server.mjs')
  if (existsSync(server)) return { server }
  rmSync(folder, { recursive: true, force: true })
  mkdirSync(folder)
  execFileSync('/bin/sh', ['-c', `git -C "$1" archive ${LANDED_COMMIT} | tar -x -C "$2"`, 'sh', root, folder])
  symlinkSync(join(root, 'node_modules'), join(folder, 'node_modules'))
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: folder, stdio: 'ignore' })
  return { server }
}

/**
 * The release before schema versions SQLite 3 and PostgreSQL 4 (the revision column and the tag
 * index; main at 200b3b0): SQLite version 2 (the landed tables, trace_context in the events), and
 * PostgreSQL version 3 (the same tables, the version recorded, the fence of version 3 on the plants,
 * deliveries and endpoints tables, as its createFenceFunctionSql and fenceTriggerOn made them).
 */
export const FENCED_SQLITE_DDL = LANDED_SQLITE_DDL.replace('PRAGMA user_version = 1;', 'PRAGMA user_version = 2;')

const PLANTS = { table: 'plants' }
const fencedAt = (version: number) => [
  LANDED_POSTGRES_DDL.replace('VALUES (1);', `VALUES (${version});`),
  createFenceFunctionSql(PLANTS, version),
  ...['"plants"', '"plants_webhook_deliveries"', '"plants_webhook_endpoints"'].flatMap((table) => fenceTriggerOn(PLANTS, table))
]
export const FENCED_POSTGRES_DDL = fencedAt(3).join(';\n')

/**
 * The release before the change feed (issue 36: SQLite 3, PostgreSQL 4): the tables above, each
 * plant's revision and the (tag, id) index, as its steps 3 (SQLite) and 4 (PostgreSQL) made them.
 */
export const REVISED_SQLITE_DDL = `${FENCED_SQLITE_DDL.replace('PRAGMA user_version = 2;', 'PRAGMA user_version = 3;')}
ALTER TABLE plants ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
CREATE INDEX plants_tag_id ON plants (tag, id);
`
export const REVISED_POSTGRES_DDL = [...fencedAt(4), ...revisionAndTagIndexSql(PLANTS)].join(';\n')
