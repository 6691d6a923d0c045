import { randomUUID } from 'node:crypto'
import type Database from 'better-sqlite3'
import { newerSchema, oddSchema, versionKind } from '../schema-version.js'

/** Whether the file holds `table`. */
const hasTable = (db: Database.Database, table: string) =>
  db.prepare<[string]>('SELECT 1 FROM sqlite_master WHERE type = \'table\' AND name = ?').get(table) !== undefined

/** The change feed's one row: its identity, and the latest event pruned (a cursor before it is gone). */
export const FEED_SCHEMA = `CREATE TABLE IF NOT EXISTS webhook_feed (
  one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, pruned INTEGER NOT NULL
) STRICT;`

/** The feed's row, made once with a new identity (no cursor of it can name an event pruned before). */
export const FEED_ROW = 'INSERT OR IGNORE INTO webhook_feed (one, id, pruned) VALUES (1, ?, 0)'

/**
 * The schema's steps, in order: step n takes a file from version n - 1 to n, and PRAGMA
 * user_version counts the steps applied. Every change to the schema is a new step at the end (a
 * test compares a fresh file's schema with the one recorded for its version). A step that a file of
 * the version before may or may not need (version 1 was written both with and without the
 * trace_context column) checks first. The outbox tables are made when webhooks are first
 * configured, at the current version (outbox.ts): a step changes them only where they exist.
 */
export const SQLITE_STEPS: ReadonlyArray<(db: Database.Database) => void> = [
  // 1: the plants table.
  (db) => db.exec('CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT'),
  // 2: each event keeps the trace context of its create or delete (NULL in the rows before it: no trace to link to).
  (db) => {
    if (!hasTable(db, 'webhook_events')) return
    const columns = db.prepare<[], { name: string }>('SELECT name FROM pragma_table_info(\'webhook_events\')').all()
    if (!columns.some(({ name }) => name === 'trace_context')) db.exec('ALTER TABLE webhook_events ADD COLUMN trace_context TEXT')
  },
  // 3: each plant's revision (its ETag; 0 for the plants before it, random for each one created from
  // now on), and the index that lists a tag's plants in id order.
  (db) => db.exec(`ALTER TABLE plants ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX plants_tag_id ON plants (tag, id)`),
  // 4: the change feed's identity and pruned mark, beside the events.
  (db) => {
    if (!hasTable(db, 'webhook_events')) return
    db.exec(FEED_SCHEMA)
    db.prepare<[string]>(FEED_ROW).run(randomUUID())
  }
]

/** The schema version this release writes: its last step's. */
export const SQLITE_SCHEMA_VERSION = SQLITE_STEPS.length

/** The version the file holds: the count of steps applied. */
export const storedVersion = (db: Database.Database) => Number(db.pragma('user_version', { simple: true }))

/** Why a file's version cannot be served by this release (newer, or no release's), or undefined. */
export function versionRefusal (version: number): string | undefined {
  const kind = versionKind(version, SQLITE_SCHEMA_VERSION)
  if (kind === 'newer') return newerSchema(version, SQLITE_SCHEMA_VERSION)
  if (kind === 'odd') return oddSchema(String(version), SQLITE_SCHEMA_VERSION, 'set PRAGMA user_version')
  return undefined
}

/**
 * Brings the file to this release's version, a transaction per step; refuses a version it cannot
 * serve. Each step holds the write lock from the moment it reads the version (IMMEDIATE): another
 * process opening the same file at once (a second instance on a shared volume) waits for it, then
 * reads the version it left, and applies only the steps still missing.
 */
export function migrate (db: Database.Database) {
  const current = storedVersion(db)
  const refusal = versionRefusal(current)
  if (refusal !== undefined) throw new Error(refusal)
  // A file at this release's version opens without the write lock (one it cannot take, a read-only -shm, still serves reads).
  if (current === SQLITE_SCHEMA_VERSION) return
  const step = db.transaction((): boolean => {
    // What another process left (a newer release's version, too, which the store's first write then refuses).
    const version = storedVersion(db)
    if (version >= SQLITE_SCHEMA_VERSION) return false
    SQLITE_STEPS[version](db)
    db.pragma(`user_version = ${version + 1}`)
    return true
  })
  while (step.immediate()) ;
}
