import { existsSync, renameSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import Database from 'better-sqlite3'

// Waits for a writer's brief lock while the connection starts; the copy itself never takes one.
const BACKUP_BUSY_TIMEOUT_MS = 5000

/**
 * A consistent copy of a live SQLite store (WAL mode) at `destination`, taken while the service
 * keeps writing. VACUUM INTO reads one snapshot in a single read transaction: every write committed
 * before it began is in the copy, none after; it never blocks the writer and, unlike the online
 * backup API, never starts over when the source changes meanwhile. The copy is written beside the
 * destination, checked (integrity_check) and only then renamed into place: a file at `destination`
 * is always a complete copy. Refuses to overwrite one.
 */
export function backupSqlite (source: string, destination: string): { plants: number } {
  const target = resolve(destination)
  if (existsSync(target)) throw new Error(`${destination} already exists: give a new path`)
  const partial = `${target}.partial`
  rmSync(partial, { force: true })
  const db = new Database(resolve(source), { fileMustExist: true })
  try {
    db.pragma(`busy_timeout = ${BACKUP_BUSY_TIMEOUT_MS}`)
    db.prepare('VACUUM INTO ?').run(partial)
  } finally {
    db.close()
  }
  const copy = new Database(partial, { fileMustExist: true })
  const verdict = copy.pragma('integrity_check', { simple: true })
  const { plants } = copy.prepare('SELECT count(*) AS plants FROM plants').get() as { plants: number }
  copy.close()
  /* c8 ignore next: a copy VACUUM INTO has just written fails the check only on a failing disk */
  if (verdict !== 'ok') throw new Error(`the copy ${partial} fails integrity_check: ${String(verdict)}`)
  renameSync(partial, target)
  return { plants }
}
