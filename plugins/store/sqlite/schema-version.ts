import type Database from 'better-sqlite3'
import { newerSchema } from '../schema-version.js'

/**
 * The schema version a file holds (PRAGMA user_version: the count of migrations applied), refused
 * when it is newer than this release knows.
 */
export function checkedSchemaVersion (db: Database.Database, known: number): number {
  const version = Number(db.pragma('user_version', { simple: true }))
  if (version > known) throw new Error(newerSchema(version, known))
  return version
}
