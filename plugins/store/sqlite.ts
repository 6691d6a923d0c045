import { closeSync, fsyncSync, mkdirSync, openSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Database, { SqliteError } from 'better-sqlite3'
import type { NewPlant, Plant } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../http-errors.js'
import { toPlant, type ListOptions, type PlantStore } from './types.js'

// Each entry takes the schema from the previous version to the next; PRAGMA user_version counts them.
const MIGRATIONS = [
  'CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT'
]

// The file cannot be written or reached for now (locked, read-only, disk full, I/O error): the
// client may retry later. Anything else, such as a corrupt file, is a 500.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|READONLY|IOERR|FULL|CANTOPEN|PROTOCOL)/

interface PlantRow { id: bigint, name: string, tag: string | null }

interface PendingCreate {
  plant: NewPlant
  resolve: (plant: Plant) => void
  reject: (error: unknown) => void
}

function migrate (db: Database.Database) {
  const version = Number(db.pragma('user_version', { simple: true }))
  for (let next = version; next < MIGRATIONS.length; next++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[next])
      db.pragma(`user_version = ${next + 1}`)
    })()
  }
}

// A new file's directory entry must reach the disk too, or a power cut can lose the whole file.
function syncDirectory (directory: string) {
  const fd = openSync(directory, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function translate (error: unknown): unknown {
  if (!(error instanceof SqliteError)) return error
  if (error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new PlantExistsError()
  if (UNAVAILABLE_CODES.test(error.code)) return new StoreUnavailableError({ cause: error })
  return error
}

function guarded<A extends unknown[], R> (operation: (...args: A) => R) {
  return async (...args: A): Promise<R> => {
    try {
      return operation(...args)
    } catch (error) {
      throw translate(error)
    }
  }
}

/**
 * A store in one SQLite file, created with its folder on first use. WAL with synchronous=FULL
 * fsyncs every commit, so a create resolves only once the plant is on stable storage.
 * better-sqlite3 is synchronous: each statement, and each commit's fsync, holds the event loop.
 */
export function openSqliteStore (path: string): PlantStore {
  const file = resolve(path)
  mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file)
  try {
    db.pragma('journal_mode = WAL')
    // Set after the switch to WAL, whose own default would be weaker.
    db.pragma('synchronous = FULL')
    db.pragma('busy_timeout = 1000')
    // Without this, ids past 2^53 are read back rounded, silently.
    db.defaultSafeIntegers(true)
    migrate(db)
    syncDirectory(dirname(file))
  } catch (error) {
    db.close()
    throw error
  }

  const insert = db.prepare<[bigint, string, string | null]>('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)')
  const select = db.prepare<[bigint], PlantRow>('SELECT id, name, tag FROM plants WHERE id = ?')
  const firstPage = db.prepare<[number], PlantRow>('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?')
  const nextPage = db.prepare<[bigint, number], PlantRow>(
    'SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?')
  const remove = db.prepare<[bigint]>('DELETE FROM plants WHERE id = ?')
  const check = db.prepare('SELECT 1')

  // Group commit: the creates that arrive together (in one turn of the event loop) share one
  // transaction, so one fsync acknowledges them all instead of one fsync each.
  let pending: PendingCreate[] = []
  const insertPending = db.transaction((batch: PendingCreate[]) => batch.map(({ plant: { id, name, tag } }) => {
    try {
      insert.run(id, name, tag ?? null)
      return undefined
    } catch (error) {
      // A taken id fails its own statement only; any other failure ends the whole transaction.
      if (error instanceof SqliteError && error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return error
      throw error
    }
  }))
  function commitPending () {
    const batch = pending
    pending = []
    let failures: Array<InstanceType<typeof SqliteError> | undefined>
    try {
      failures = insertPending(batch)
    } catch (error) {
      // Rolled back: no plant of this batch is stored.
      for (const { reject } of batch) reject(translate(error))
      return
    }
    batch.forEach(({ plant, resolve, reject }, i) => {
      const failure = failures[i]
      if (failure) reject(translate(failure))
      else resolve(toPlant(plant.name, plant.tag))
    })
  }

  return {
    create: (plant: NewPlant) => new Promise<Plant>((resolve, reject) => {
      if (pending.length === 0) setImmediate(commitPending)
      pending.push({ plant, resolve, reject })
    }),
    get: guarded((id: bigint) => {
      const row = select.get(id)
      return row && toPlant(row.name, row.tag)
    }),
    list: guarded(({ after, limit }: ListOptions) => {
      const rows = after === undefined ? firstPage.all(limit) : nextPage.all(after, limit)
      return rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
    }),
    delete: guarded((id: bigint) => remove.run(id).changes > 0),
    ping: guarded(() => {
      check.get()
    }),
    async close () {
      if (pending.length > 0) commitPending()
      db.close()
    }
  }
}
