import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { guardStore } from './guard.js'
import { createMemoryStore } from './memory/store.js'
import { hasOutbox, type OutboxOptions, type WebhookOutbox } from './outbox.js'
import type { Schedule } from '../http/log-repeats.js'
import { Readiness } from './readiness.js'
import { isPlantStore, STORE_METHODS, type PlantStore } from './types.js'
import { StoreOpenError } from './store-url.js'
import type { PostgresStoreOptions } from './postgres/store.js'

export { STORE_METHODS, type ListOptions, type PlantStore } from './types.js'
export { STORE_URL_PATTERN, StoreOpenError } from './store-url.js'
export type { PostgresStoreOptions, StoreLog } from './postgres/store.js'

/**
 * A host's pg.Pool, as far as the plugin needs to tell one (structurally: the plugin's types do
 * not require pg's). The PostgreSQL store uses it and never ends it.
 */
export interface PgPool {
  connect (): Promise<unknown>
  query (...args: never[]): unknown
  end (): Promise<void>
}

/** Whether a store option is a pool rather than a PlantStore. */
export const isPool = (value: unknown): value is PgPool => typeof value === 'object' && value !== null && !isPlantStore(value) &&
  ['connect', 'query', 'end'].every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/**
 * Loads a store's module. Its driver (better-sqlite3, pg) is an optional peer dependency that the
 * host installs for the store it uses: when it is missing, the error says which to install.
 */
export async function loadDriver<M> (driver: string, load: () => Promise<M>): Promise<M> {
  try {
    return await load()
  } catch (cause) {
    // Matched by message: ERR_MODULE_NOT_FOUND is also raised for a missing file of our own.
    if (String((cause as Error).message).startsWith(`Cannot find package '${driver}'`)) {
      throw new StoreOpenError(`${driver} is not installed: npm install ${driver}`, { cause })
    }
    throw cause
  }
}

/**
 * Opens the store a URL names (the DATABASE_URL setting). A PostgreSQL server that is down is not
 * an open error: that store resolves and answers 503 until the server is back.
 */
export async function openStore (url: string | PgPool, postgres: PostgresStoreOptions = {}): Promise<PlantStore> {
  if (typeof url !== 'string') {
    const { openPostgresStore } = await loadDriver('pg', () => import('./postgres/store.js'))
    return openPostgres(() => openPostgresStore(url as never, postgres))
  }
  if (url === 'memory:') return createMemoryStore()
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length)
    // Each driver is loaded only when its store is used: it shortens start-up.
    const { openSqliteStore } = await loadDriver('better-sqlite3', () => import('./sqlite/store.js'))
    try {
      return openSqliteStore(path, { log: postgres.log })
    } catch (cause) {
      throw new StoreOpenError(`SQLite file ${path}: ${(cause as Error).message}`, { cause })
    }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { openPostgresStore } = await loadDriver('pg', () => import('./postgres/store.js'))
    return openPostgres(() => openPostgresStore(url, postgres))
  }
  throw new StoreOpenError(`unsupported store URL "${url}": use memory:, sqlite:<path> or postgres://…`)
}

async function openPostgres (open: () => Promise<PlantStore>): Promise<PlantStore> {
  try {
    return await open()
  } catch (cause) {
    // The URL itself is left out of the message: it may hold a password.
    throw new StoreOpenError(`PostgreSQL: ${(cause as Error).message}`, { cause })
  }
}

const DECORATOR = 'plantStore'
const OUTBOX_DECORATOR = 'plantStoreOutbox'
const READINESS_DECORATOR = 'plantStoreReadiness'

/** Opens the webhook outbox of the store the scope uses; undefined when that store keeps none. */
export type OutboxOpener = ((options: OutboxOptions) => Promise<WebhookOutbox>) | undefined

/**
 * The store this plugin decorated the scope with. Its type is not declared on FastifyInstance:
 * such a declaration would reach every host app's instance, where the decorator is not.
 */
export const storeOf = (fastify: FastifyInstance): PlantStore =>
  (fastify as unknown as Record<typeof DECORATOR, PlantStore>)[DECORATOR]

export const outboxOpenerOf = (fastify: FastifyInstance): OutboxOpener =>
  (fastify as unknown as Record<typeof OUTBOX_DECORATOR, OutboxOpener>)[OUTBOX_DECORATOR]

/** The store's readiness, which /readyz probes: it logs each change. */
export const readinessOf = (fastify: FastifyInstance): Readiness =>
  (fastify as unknown as Record<typeof READINESS_DECORATOR, Readiness>)[READINESS_DECORATOR]

export interface StoreOptions {
  /**
   * A store URL to open (and close with the app), a host's pg.Pool to open the PostgreSQL store
   * on (closed with the app, the pool left open), or a store the caller owns.
   */
  store: string | PgPool | PlantStore
  /** The PostgreSQL store's table and pool settings. */
  postgres?: Omit<PostgresStoreOptions, 'log'>
  /** Wraps the store the routes use, e.g. to time its operations. */
  wrap?: (store: PlantStore) => PlantStore
  /** When the readiness changes after a logged one are summed up (a test's clock); a timer by default. */
  schedule?: Schedule
}

/** The store the routes use: the given or opened one, its failures classified, then wrapped. */
export default fp<StoreOptions>(async function store (fastify, { store, postgres, wrap = (plain) => plain, schedule }) {
  const owned = typeof store === 'string' || isPool(store)
  // The store's own warnings (a table turned unusable) go to the app's log.
  const log = { warn: (message: string) => fastify.log.warn(message), info: (message: string) => fastify.log.info(message) }
  const opened = owned ? await openStore(store, { ...postgres, log }) : store as PlantStore
  const guarded = guardStore(opened)
  const plantStore = wrap(guarded)
  if (!isPlantStore(plantStore)) {
    if (owned) await opened.close()
    throw new TypeError(`plant-store: option wrapStore returned no store: it must return an object implementing PlantStore (${STORE_METHODS.join(', ')})`)
  }
  fastify.decorate(DECORATOR, plantStore)
  fastify.decorate(OUTBOX_DECORATOR, hasOutbox(opened) ? (options: OutboxOptions) => opened.openOutbox(options) : undefined)
  const readiness = new Readiness(fastify.log, schedule)
  fastify.decorate(READINESS_DECORATOR, readiness)
  // A store down at start says so once, now. Not awaited: a store that does not answer must not
  // hold up the start (nor count in the wrapped store's metrics); the close waits for it.
  const probed = readiness.probe(guarded)
  // onClose runs once the server has stopped and the requests in flight are answered.
  fastify.addHook('onClose', async () => {
    await probed
    readiness.flush()
    if (owned) await plantStore.close()
  })
}, { name: 'plant-store-store' })
