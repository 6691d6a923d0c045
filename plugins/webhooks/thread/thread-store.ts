import { loadDriver, openStore, type PgPool, type PlantStore, type StoreLog } from '../../store/index.js'
import type { OutboxStore } from '../../store/outbox.js'
import type { DeliveryThreadData } from './messages.js'

// Claims, result batches, endpoint checks and pruning: a few queries at once at most; and on
// PostgreSQL one connection held to listen for other instances' commits (announce.ts).
export const POOL_SIZE = 4

type ThreadStore = PlantStore & OutboxStore

/**
 * The delivery thread's own connection to the store: the SQLite file (as a bookkeeping
 * connection), the PostgreSQL database of a URL, or that of a host's pg.Pool, on a pool of the
 * thread's own made from that pool's settings (ended with the store).
 */
export async function openThreadStore ({ store, postgres }: DeliveryThreadData, log: StoreLog): Promise<ThreadStore> {
  if (typeof store !== 'string') {
    const { default: pg } = await loadDriver('pg', () => import('pg'))
    const pool = new pg.Pool({ ...store.poolSettings, max: POOL_SIZE })
    // A connection the server closes would otherwise end the thread: the pool drops it and opens another.
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    const opened = await openStore(pool as PgPool, { ...postgres, log }) as ThreadStore
    const close = opened.close.bind(opened)
    return Object.assign(opened, { close: async () => { await close(); await pool.end() } })
  }
  if (store.startsWith('sqlite:')) {
    const { openSqliteStore } = await loadDriver('better-sqlite3', () => import('../../store/sqlite/store.js'))
    return openSqliteStore(store.slice('sqlite:'.length), { log, bookkeeping: true })
  }
  return await openStore(store, { ...postgres, poolSize: POOL_SIZE, log }) as ThreadStore
}
