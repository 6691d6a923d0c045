import { resolve } from 'node:path'

/** The database file a `sqlite:<path>` store URL names, absolute; undefined for another store. */
export const sqliteFileOf = (url: unknown) => typeof url === 'string' && url.startsWith('sqlite:') ? resolve(url.slice('sqlite:'.length)) : undefined

/** The files SQLite keeps for a database in WAL mode: the database, its log and its shared memory. */
export const sqliteFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`] as const

/**
 * The store when DATABASE_URL is not set. Its folder, ./data, is the only one the store makes:
 * any other missing folder is taken for a mistyped path.
 */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/plants.db'
