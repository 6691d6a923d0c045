import fp from 'fastify-plugin'
import { createMemoryStore } from './memory.js'
import type { PlantStore } from './types.js'

export type { ListOptions, PlantStore } from './types.js'

/** The store URLs understood: `memory:`, `sqlite:<path>` and `postgres://…` (or `postgresql://…`). */
export const STORE_URL_PATTERN = '^(memory:$|sqlite:.+|postgres(ql)?://)'

/** A store that cannot be opened: a setting to fix, not a request to retry. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}

/**
 * Opens the store a URL names (the DATABASE_URL setting). A PostgreSQL server that is down is not
 * an open error: that store resolves and answers 503 until the server is back.
 */
export async function openStore (url: string): Promise<PlantStore> {
  if (url === 'memory:') return createMemoryStore()
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    try {
      // Each driver is loaded only when its store is used: it shortens start-up.
      const { openSqliteStore } = await import('./sqlite.js')
      return openSqliteStore(path)
    } catch (cause) {
      throw new StoreOpenError(`SQLite file ${path}: ${(cause as Error).message}`, { cause })
    }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      const { openPostgresStore } = await import('./postgres.js')
      return await openPostgresStore(url)
    } catch (cause) {
      // The URL itself is left out of the message: it may hold a password.
      throw new StoreOpenError(`PostgreSQL: ${(cause as Error).message}`, { cause })
    }
  }
  throw new StoreOpenError(`unsupported store URL "${url}": use memory:, sqlite:<path> or postgres://…`)
}

declare module 'fastify' {
  interface FastifyInstance {
    plantStore: PlantStore
  }
}

export interface StoreOptions {
  /** A store URL to open (and close with the app), or a store the caller owns. */
  store: string | PlantStore
  /** Wraps the store the routes use, e.g. to time its operations. */
  wrap?: (store: PlantStore) => PlantStore
}

export default fp<StoreOptions>(async function store (fastify, { store, wrap = (plain) => plain }) {
  const owned = typeof store === 'string'
  const plantStore = wrap(owned ? await openStore(store) : store)
  fastify.decorate('plantStore', plantStore)
  // onClose runs once the server has stopped and the requests in flight are answered.
  if (owned) fastify.addHook('onClose', () => plantStore.close())
}, { name: 'plant-store-store' })
