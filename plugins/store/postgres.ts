import pg from 'pg'
import type { NewPlant, Plant } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../http-errors.js'
import { toPlant, type ListOptions, type PlantStore } from './types.js'

// Each entry takes the schema from the previous version to the next; plant_store_schema counts them.
const MIGRATIONS = [
  'CREATE TABLE plants (id int8 PRIMARY KEY, name text NOT NULL, tag text)'
]

// Connecting (or waiting for a pooled connection) and each statement are bounded, so that a
// request fails with 503 within about 2 s when the server is down, unreachable or stuck. The
// server cancels a slow statement first, which keeps the connection; our own read timeout is
// the backstop for a server that does not answer at all.
const CONNECT_TIMEOUT_MS = 1000
const STATEMENT_TIMEOUT_MS = 800
const QUERY_TIMEOUT_MS = 1000

// SQLSTATEs of a server that cannot answer now: connection exceptions (08), insufficient
// resources (53, e.g. too many connections), statement timeout or cancel, shutdown, start-up.
const UNAVAILABLE_SQLSTATES = /^(08|53|57014$|57P0[123]$)/

// Failures of the socket, from Node or from pg itself (whose own errors carry no code).
const UNAVAILABLE_SYSTEM_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN',
  'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN'
])
const UNAVAILABLE_PG_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable'
])

const INT8_OID = pg.types.builtins.INT8

interface PlantRow { id: bigint, name: string, tag: string | null }

interface PendingCreate {
  plant: NewPlant
  resolve: (plant: Plant) => void
  reject: (error: unknown) => void
}

const INSERT_BATCH = `INSERT INTO plants (id, name, tag)
  SELECT * FROM unnest($1::int8[], $2::text[], $3::text[])
  ON CONFLICT (id) DO NOTHING RETURNING id`

function isUnavailable (error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return UNAVAILABLE_SQLSTATES.test(String(error.code))
  const { code, message } = error as NodeJS.ErrnoException
  return UNAVAILABLE_SYSTEM_CODES.has(String(code)) || UNAVAILABLE_PG_MESSAGES.has(message)
}

// A taken id is not an error here: the batched INSERT skips it (ON CONFLICT DO NOTHING).
function translate (error: unknown): unknown {
  if (isUnavailable(error)) return new StoreUnavailableError({ cause: error })
  return error
}

// While a client is checked out, a socket failure is also emitted as 'error' on it: unheard, that
// would crash the process. The query running then fails with the same error, which is what counts.
function ignore () {}

/**
 * Runs `work` on a pooled connection. The connection is reused after an error only when
 * `reusable` says it is still in a known state; otherwise the pool closes it.
 */
async function withClient<R> (
  pool: pg.Pool, work: (client: pg.PoolClient) => Promise<R>, reusable: (error: unknown) => boolean
): Promise<R> {
  const client = await pool.connect()
  client.on('error', ignore)
  let result: R
  try {
    result = await work(client)
  } catch (error) {
    client.removeListener('error', ignore)
    client.release(!reusable(error))
    throw error
  }
  client.removeListener('error', ignore)
  client.release()
  return result
}

// The server answered with an ordinary error (a duplicate key, a statement timeout): the connection
// is idle and in sync, so a 409 costs no reconnect. A timeout on our side or a FATAL one is not.
function isServerAnswer (error: unknown) {
  return error instanceof pg.DatabaseError && error.severity === 'ERROR'
}

function migrate (pool: pg.Pool) {
  return withClient(pool, async (client) => {
    await client.query('BEGIN')
    // Instances starting together take turns; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    await client.query('CREATE TABLE IF NOT EXISTS plant_store_schema (version integer NOT NULL)')
    const { rows } = await client.query<{ version: number }>('SELECT version FROM plant_store_schema')
    if (rows.length === 0) await client.query('INSERT INTO plant_store_schema (version) VALUES (0)')
    const version = rows[0]?.version ?? 0
    for (let next = version; next < MIGRATIONS.length; next++) await client.query(MIGRATIONS[next])
    if (version < MIGRATIONS.length) {
      await client.query('UPDATE plant_store_schema SET version = $1', [MIGRATIONS.length])
    }
    await client.query('COMMIT')
  }, () => false) // a failed transaction's connection is closed, not rolled back and reused
}

/**
 * A store in a PostgreSQL database, shared by any number of service instances. It resolves even
 * when the server is down: the table is then created by the first operation that reaches it.
 * A create resolves after COMMIT, which with PostgreSQL's default synchronous_commit=on means the
 * row is flushed to the write-ahead log on stable storage.
 */
export async function openPostgresStore (url: string): Promise<PlantStore> {
  const pool = new pg.Pool({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    // int8 as an exact BigInt for this pool only: pg.types.setTypeParser would change a host app's pg too.
    types: {
      getTypeParser: (oid, format) =>
        oid === INT8_OID && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format)
    }
  })
  // The pool drops a broken idle connection and opens another when needed; without a listener,
  // a connection the server closes (restart, failover) would crash the process.
  pool.on('error', ignore)

  let migration: Promise<void> | undefined
  const migrated = () => {
    migration ??= migrate(pool).catch((error) => {
      migration = undefined
      throw error
    })
    return migration
  }

  // Bind ids as BigInt: pg sends them as their exact decimal text.
  async function query<R extends pg.QueryResultRow> (text: string, values: unknown[] = []) {
    try {
      await migrated()
      return await withClient(pool, (client) => client.query<R>(text, values), isServerAnswer)
    } catch (error) {
      throw translate(error)
    }
  }

  try {
    await migrated()
  } catch (error) {
    // A server that is down is retried by the first operation; anything else is a setting to fix.
    if (!isUnavailable(error)) {
      await pool.end()
      throw error
    }
  }

  // Group commit, as for SQLite: the creates of one event-loop turn reach the database as one
  // INSERT, so they share one round trip and one WAL flush. The database's own primary key still
  // decides: an id it did not insert is taken (409), and a repeat of an id within the batch is 409
  // whatever happens to the first one.
  let pending: PendingCreate[] = []
  async function insertPending () {
    const batch = pending
    pending = []
    const first = new Map<bigint, PendingCreate>()
    for (const create of batch) {
      if (first.has(create.plant.id)) create.reject(new PlantExistsError())
      else first.set(create.plant.id, create)
    }
    const plants = [...first.values()].map(({ plant }) => plant)
    try {
      const { rows } = await query<{ id: bigint }>(INSERT_BATCH, [
        plants.map(({ id }) => id), plants.map(({ name }) => name), plants.map(({ tag }) => tag ?? null)
      ])
      const inserted = new Set(rows.map(({ id }) => id))
      for (const [id, { plant, resolve, reject }] of first) {
        if (inserted.has(id)) resolve(toPlant(plant.name, plant.tag))
        else reject(new PlantExistsError())
      }
    } catch (error) {
      for (const { reject } of first.values()) reject(error)
    }
  }

  return {
    create: (plant: NewPlant) => new Promise<Plant>((resolve, reject) => {
      if (pending.length === 0) setImmediate(insertPending)
      pending.push({ plant, resolve, reject })
    }),
    async get (id: bigint) {
      const { rows: [row] } = await query<PlantRow>('SELECT name, tag FROM plants WHERE id = $1', [id])
      return row && toPlant(row.name, row.tag)
    },
    async list ({ after, limit }: ListOptions) {
      const { rows } = after === undefined
        ? await query<PlantRow>('SELECT id, name, tag FROM plants ORDER BY id LIMIT $1', [limit])
        : await query<PlantRow>('SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2', [after, limit])
      return rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
    },
    async delete (id: bigint) {
      const { rowCount } = await query('DELETE FROM plants WHERE id = $1', [id])
      return rowCount === 1
    },
    async ping () {
      await query('SELECT 1')
    },
    async close () {
      if (!pool.ending) await pool.end()
    }
  }
}
