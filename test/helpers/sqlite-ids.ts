import Database from 'better-sqlite3'

/** The ids stored in the SQLite database at `file`, as the next opener of the path sees them. */
export function storedSqliteIds (file: string): string[] {
  const db = new Database(file, { fileMustExist: true })
  try {
    db.defaultSafeIntegers(true)
    // The table itself may have been in a -wal that is gone.
    if (db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'plants'").get() === undefined) return []
    return db.prepare<[], { id: bigint }>('SELECT id FROM plants ORDER BY id').all().map(({ id }) => String(id))
  } finally {
    db.close()
  }
}
