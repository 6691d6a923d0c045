/**
 * The store URLs understood: `memory:`, `sqlite:<path>` and `postgres://…` (or `postgresql://…`).
 * `sqlite::memory:` is refused: SQLite would keep nothing durable (and better-sqlite3 would make a
 * file of that name); `memory:` is the store in memory.
 */
export const STORE_URL_PATTERN = '^(memory:$|sqlite:(?!:memory:$).+|postgres(ql)?://)'

/** A store that cannot be opened: a setting to fix, not a request to retry. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}
