import { createHash } from 'node:crypto'
import pg from 'pg'
import { locateFailure } from './failures.js'

// Connecting (or waiting for a pooled connection) and each statement are bounded, so that a
// request fails with 503 within about 2 s when the server is down, unreachable or stuck. The
// server cancels a slow statement first, which keeps the connection; our own deadline, a little
// later, is the backstop for a server that does not answer at all.
const CONNECT_TIMEOUT_MS = 1000
export const STATEMENT_TIMEOUT_MS = 800
export const DEADLINE_AFTER_STATEMENT_MS = 200
// A row another transaction holds (an insert of the same id not yet committed) is waited for this
// long: far longer than another instance's commit takes, short enough to try each row of a batch
// alone after it and still answer within the bound above.
const LOCK_TIMEOUT_MS = 300

export const INT8_OID: number = pg.types.builtins.INT8

// int8 as an exact BigInt for the store's own queries only: pg.types.setTypeParser, or a pool's
// `types`, would change what a host's queries get too (on a shared pool).
const TYPES = {
  getTypeParser: (oid: number, format?: string) =>
    oid === INT8_OID && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format as 'text')
} as pg.CustomTypesConfig

/** The settings of the store's own pool (not of a shared one). */
export interface PoolOptions {
  /** The most connections of the store's own pool (not of a shared one). */
  poolSize?: number
  /** How long to wait for a connection of the store's own pool, in ms. */
  connectionTimeout?: number
  /** How long an idle connection of the store's own pool is kept, in ms. */
  idleTimeout?: number
  /** The longest a statement may take, in ms; the server cancels it then (on the store's own pool). */
  statementTimeout?: number
}

// A pooled client's socket failure is also emitted as 'error': unheard, that would crash the process.
export function ignore () {}

// Clients of the store's own pools that reported an error while no one else listened: lost.
const broken = new WeakSet<pg.ClientBase>()

// A prepared statement's name, made from its text: never two texts under one name, and within
// PostgreSQL's 63 bytes however long the table's name (a longer one would be cut, and clash).
const statementNames = new Map<string, string>()
function statementName (text: string): string {
  let name = statementNames.get(text)
  if (name === undefined) statementNames.set(text, name = `plant-store ${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`)
  return name
}

/** A query of the store's own: ids come back as BigInt. A `prepared` one is parsed once per connection. */
export const query = <R extends pg.QueryResultRow> (client: pg.PoolClient, text: string, values: unknown[] = [], prepared = false) =>
  client.query<R>({ text, values, name: prepared ? statementName(text) : undefined, types: TYPES })

/**
 * Runs `work` on a pooled connection within `timeout` ms, and classifies a failure by where it
 * happened (see Where). The connection is reused after a failure only when the server answered it
 * and the session is in a known state; otherwise the pool closes it.
 */
export async function withClient<R> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<R>, timeout: number): Promise<R> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw locateFailure(error, true, false)
  }
  let lost = broken.has(client)
  const onLost = () => { lost = true }
  client.on('error', onLost).on('end', onLost)
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      lost = true
      reject(new Error(`PostgreSQL did not answer within ${timeout} ms`))
    }, timeout)
  })
  // Released, the client is the pool's again: its own listener hears of an idle connection's end.
  const done = () => {
    clearTimeout(timer)
    client.removeListener('error', onLost).removeListener('end', onLost)
  }
  try {
    const result = await Promise.race([work(client), deadline])
    done()
    client.release()
    return result
  } catch (error) {
    done()
    const failure = locateFailure(error, false, lost)
    // After a wait given up or a refused statement the session is idle and in sync: no reconnect.
    // A read-only session is dropped, so that a database made writable again is used as such.
    const reusable = error instanceof pg.DatabaseError && (failure.where === 'wait' || failure.where === 'refused')
    client.release(!reusable)
    throw failure
  }
}

/** The store's own pool for a URL; a host's pool is used as it is. */
export function poolFor (source: string | pg.Pool, options: PoolOptions, statementTimeout: number): pg.Pool {
  if (typeof source !== 'string') return source
  const pool = new pg.Pool({
    connectionString: source,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectionTimeout ?? CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: options.idleTimeout,
    statement_timeout: statementTimeout,
    lock_timeout: Math.min(LOCK_TIMEOUT_MS, statementTimeout)
  })
  // The pool drops a broken idle connection and opens another when needed; without a listener,
  // a connection the server closes (restart, failover) would crash the process. A shared pool's
  // listener is its owner's.
  pool.on('error', ignore)
  // The pool removes its own listener from a new client as it hands it over, inside the socket's
  // data event that completed the connection: a termination (57P01) in the same chunk reached a
  // client that no one listened to yet, and crashed the process. Each has one for its whole life.
  pool.on('connect', (client) => client.on('error', () => broken.add(client)))
  return pool
}
