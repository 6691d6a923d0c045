import { performance } from 'node:perf_hooks'
import type { Test } from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { exitWithin, startServer, type EnvOverrides } from './server-process.js'

const INT64_MIN = -9223372036854775808n
const INT64_MAX = 9223372036854775807n

/** Runs `task` over 0..count-1 with at most `concurrency` at a time. */
export async function pool (count: number, concurrency: number, task: (index: number) => Promise<void>) {
  let next = 0
  const worker = async () => {
    while (next < count) await task(next++)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

export interface Answer { status: number, text: string, elapsed: number }

/** One request with a bearer token (and a JSON body when given), timed until the end of the answer's body. */
export async function send (url: string, token: string, method: string, path: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const start = performance.now()
  const response = await fetch(`${url}${path}`, { method, headers, body })
  const text = await response.text()
  return { status: response.status, text, elapsed: performance.now() - start }
}

/** The answer has `status` and the body `{ error: status, message: <non-empty string> }`, nothing else. */
export function isErrorShaped ({ status, text }: Pick<Answer, 'status' | 'text'>, expected: number): boolean {
  try {
    const body = JSON.parse(text) as Record<string, unknown>
    return status === expected && Object.keys(body).sort().join() === 'error,message' &&
      body.error === expected && typeof body.message === 'string' && body.message !== ''
  } catch {
    return false
  }
}

/** A 503 Error saying that the store is unavailable (not, say, that the service is overloaded). */
export function isStoreUnavailable (answer: Pick<Answer, 'status' | 'text'>): boolean {
  return isErrorShaped(answer, 503) &&
    (JSON.parse(answer.text) as { message: string }).message === new StoreUnavailableError().message
}

/** Asserts that an answer (or an inject() reply) is the 503 Error saying that the store is unavailable. */
export function assertUnavailable (t: Test, answer: Pick<Answer, 'status' | 'text'> | { statusCode: number, body: string }, label: string) {
  const found = 'statusCode' in answer ? { status: answer.statusCode, text: answer.body } : answer
  t.ok(isStoreUnavailable(found), `${label}: 503 Error-shaped, the store is unavailable`, { found })
}

/** Compares decimal int64 texts numerically. */
export const byNumericId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0)

/** The ids of a GET /plants answer, read from its raw text, so that none is rounded through a double. */
export const listedIds = (text: string) => [...text.matchAll(/"id":(-?\d+)[,}]/g)].map(([, id]) => id)

/** A POST /plants body written as raw JSON text: the id stays exactly as written, however large. */
export function plantBody (id: string, name: string, tag?: string): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`
}

export interface DurabilityOptions {
  /** Creates to send; default 300. */
  total?: number
  /** Creates in flight at once; default 16. */
  concurrency?: number
}

/**
 * Starts a real server on `DATABASE_URL`, sends `total` creates with `concurrency` in flight,
 * SIGKILLs it the moment the last answer arrives, starts a new server on the same store and
 * asserts that every acknowledged plant reads back, and that the listing holds exactly them.
 * The store must be empty at first.
 */
export async function assertCreatesSurviveSigkill (t: Test, databaseUrl: string, options: DurabilityOptions = {}) {
  const { total = 300, concurrency = 16 } = options
  const token = 'durability-token'
  const headers = { authorization: `Bearer ${token}` }
  const env: EnvOverrides = { DATABASE_URL: databaseUrl, API_TOKENS: token }

  /** Distinct ids: small ones, ones past 2^53 (a double would round them), and both ends of int64. */
  const idFor = (index: number): string => {
    if (index === total - 1) return String(INT64_MAX)
    switch (index % 3) {
      case 0: return String(index + 1)
      case 1: return String(9007199254740993n + BigInt(index))
      default: return String(INT64_MIN + BigInt(index))
    }
  }
  const plantFor = (index: number): { name: string, tag?: string } => {
    const id = idFor(index)
    return index % 4 === 0 ? { name: `plant ${id}`, tag: `tag ${index}` } : { name: `plant ${id}` }
  }

  const first = await startServer(t, env)
  const acknowledged: number[] = []
  const failures: string[] = []
  let answered = 0
  await pool(total, concurrency, async (index) => {
    const id = idFor(index)
    const { name, tag } = plantFor(index)
    try {
      const response = await fetch(`${first.url}/plants`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: plantBody(id, name, tag)
      })
      const text = await response.text()
      if (response.status === 200) acknowledged.push(index)
      else failures.push(`${id}: ${response.status} ${text}`)
    } catch (error) {
      failures.push(`${id}: ${(error as Error).message}`)
    }
    // The moment the last answer arrives: no time for anything to be written later.
    if (++answered === total) first.child.kill('SIGKILL')
  })

  const exit = await exitWithin(first, 10_000)
  t.same(exit, { code: null, signal: 'SIGKILL' }, 'the first server was killed with SIGKILL')
  t.same(failures, [], 'every create was answered 200')
  t.equal(acknowledged.length, total, `${total} creates acknowledged`)

  const second = await startServer(t, env)
  const missing: string[] = []
  let found = 0
  await pool(acknowledged.length, concurrency, async (position) => {
    const index = acknowledged[position]
    const id = idFor(index)
    try {
      const response = await fetch(`${second.url}/plants/${id}`, { headers })
      const text = await response.text()
      if (response.status === 200 && JSON.stringify(JSON.parse(text)) === JSON.stringify(plantFor(index))) found++
      else missing.push(`${id}: ${response.status} ${text}`)
    } catch (error) {
      missing.push(`${id}: ${(error as Error).message}`)
    }
  })

  t.comment(`plants acknowledged: ${acknowledged.length}, plants found after SIGKILL and restart: ${found}`)
  t.same(missing, [], 'each acknowledged plant reads back with its name and tag')
  t.equal(found, acknowledged.length, 'acknowledged == found')

  const list = await fetch(`${second.url}/plants?limit=1000`, { headers })
  t.equal(list.status, 200, 'the listing answers 200')
  t.same(listedIds(await list.text()), acknowledged.map(idFor).sort(byNumericId),
    'the listing holds exactly the acknowledged ids, in ascending order, unrounded')

  second.child.kill('SIGTERM')
  t.same(await exitWithin(second, 10_000), { code: 0, signal: null }, 'the second server stops cleanly')
}
