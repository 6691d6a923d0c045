import type Database from 'better-sqlite3'

/**
 * The schema version a file holds (PRAGMA user_version: the count of migrations applied), refused
 * when it is newer than this release knows: a newer release may have changed what the tables mean,
 * and writing to them silently would be a downgrade nobody chose.
 */
export function checkedSchemaVersion (db: Database.Database, known: number): number {
  const version = Number(db.pragma('user_version', { simple: true }))
  if (version > known) {
    throw new Error(`schema version ${version} was written by a newer plant-store (this one knows up to ${known}): run that release, or restore a backup taken before the upgrade`)
  }
  return version
}
