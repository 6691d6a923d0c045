// The requests of each measured path, shared by the benchmark and the profiler.
import autocannon, { type Request } from 'autocannon'
import type { Path } from './report.js'

// Every create carries the next id: unique on every server, across all runs of a process.
let nextId = 1
const SNOWFLAKE = 2n ** 62n

/** The plants each update run replaces, one after another: ids -1 … -UPDATE_POOL, stored by seedRequests first. */
export const UPDATE_POOL = 1000

/**
 * Stores the plants the update runs replace on the service at `url`: the reason when not every
 * one answered 200 or (already there, as on a preloaded store) 409.
 */
export async function seedUpdatePool (url: string, token: string): Promise<string | undefined> {
  let seeded = 0
  const result = await autocannon({
    url: `${url}/plants`,
    method: 'POST',
    connections: 10,
    amount: UPDATE_POOL,
    headers: headersFor('create', token),
    requests: [{ setupRequest: (request) => ({ ...request, body: `{"id":${-1 - seeded++},"name":"Monstera","tag":"tropical"}` }) }]
  })
  const stored = Object.entries(result.statusCodeStats).filter(([code]) => code === '200' || code === '409').reduce((sum, [, { count }]) => sum + count, 0)
  return stored === UPDATE_POOL ? undefined : `storing the update pool: ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`
}

/**
 * The request autocannon repeats on `path`: a new plant, a body the schema refuses, no token, a
 * page after a random one of `preloaded` plants (the bench's preloads have ids -1 to -preloaded),
 * or a plant of the update pool renamed (a PUT without If-Match, as most clients send it).
 */
export function requestFor (path: Path, preloaded = 1_000_000): Request {
  if (path === 'create') {
    return { setupRequest: (request) => ({ ...request, body: `{"id":${nextId++},"name":"Monstera","tag":"tropical"}` }) }
  }
  if (path === 'create64') {
    // 64-bit ids as snowflake-style generators make them: 19 digits, more than a double holds.
    return { setupRequest: (request) => ({ ...request, body: `{"id":${SNOWFLAKE + BigInt(nextId++)},"name":"Monstera","tag":"tropical"}` }) }
  }
  if (path === 'list') {
    // On a store without preloaded plants, every request is the first page of the plants created.
    const after = () => -1 - Math.floor(Math.random() * preloaded)
    return { setupRequest: (request) => ({ ...request, method: 'GET', body: undefined, path: `/plants?limit=100&after=${after()}` }) }
  }
  if (path === 'update') {
    let next = 0
    const body = '{"name":"Monstera deliciosa","tag":"tropical"}'
    return { setupRequest: (request) => ({ ...request, method: 'PUT', body, path: `/plants/${-1 - (next++ % UPDATE_POOL)}` }) }
  }
  return { body: path === 'invalid' ? '{"id":"x","name":"Monstera"}' : '{"id":1,"name":"Monstera"}' }
}

/** The headers of `path`: JSON, and the token except on the anonymous path. */
export function headersFor (path: Path, token: string): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (path !== 'anonymous') headers.authorization = `Bearer ${token}`
  return headers
}
