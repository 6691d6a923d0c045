import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Test } from 'tap'
import { pool } from './load.js'

export interface Attack {
  /** Kills the attacking process. */
  stop (): void
  /** Resolves once the attacker has printed a count of at least `count` (rejects after `timeout` ms). */
  counted (count: number, timeout: number): Promise<void>
}

/**
 * Runs `main(...args)` in a node process of its own, as an attacker is another machine: the
 * function is plain JavaScript (no closure, no import), which requires what it needs, and may print
 * counts of what it achieved, one a line. Killed at teardown, or earlier by `stop`.
 */
export function attack (t: Test, main: (...args: never[]) => void, args: unknown[]): Attack {
  const code = `(${main.toString()})(${args.map((arg) => JSON.stringify(arg)).join(', ')})`
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] })
  let latest = 0
  const waiters = new Set<() => void>()
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    latest = Math.max(latest, ...chunk.split('\n').filter(Boolean).map(Number))
    for (const waiter of waiters) waiter()
  })
  const stop = () => { child.kill('SIGKILL') }
  t.teardown(stop)
  const counted = (count: number, timeout: number) => new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the attacker counted ${latest}, not ${count}, within ${timeout} ms`)), timeout)
    const check = () => {
      if (latest < count) return
      clearTimeout(timer)
      waiters.delete(check)
      resolve()
    }
    waiters.add(check)
    check()
  })
  return { stop, counted }
}

/** One GET with a token on a fresh connection; resolves whether it was answered `status` within `timeout` ms. */
export function answeredFresh (url: string, token: string, path: string, status: number, timeout: number): Promise<boolean> {
  return new Promise((resolve) => {
    const headers = { authorization: `Bearer ${token}`, connection: 'close' }
    const sent = request(`${url}${path}`, { headers, agent: false, timeout }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode === status))
      response.on('error', () => resolve(false))
    })
    sent.on('timeout', () => sent.destroy())
    sent.on('error', () => resolve(false))
    sent.end()
  })
}

/** How many of `count` fresh requests (GET /healthz), `concurrency` at a time, were answered in time. */
export async function freshAnswered (url: string, token: string, count: number, concurrency: number, timeout: number): Promise<number> {
  let ok = 0
  await pool(count, concurrency, async () => {
    if (await answeredFresh(url, token, '/healthz', 200, timeout)) ok++
  })
  return ok
}

export interface ClientRun {
  /** Requests answered as expected (404: no such plant). */
  ok: number
  /** Requests that failed, by error code or status. */
  failures: Record<string, number>
  failed: number
}

/**
 * A client with a token on `connections` pooled keep-alive connections, reading GET /plants/1
 * (404) as fast as answers come, for `duration` ms. A request that takes longer than `timeout` ms
 * counts as failed.
 */
export async function keepAliveClient (url: string, token: string, connections: number, duration: number, timeout: number): Promise<ClientRun> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const failures: Record<string, number> = {}
  let ok = 0
  const end = performance.now() + duration
  const once = () => new Promise<string | undefined>((resolve) => {
    const sent = request(`${url}/plants/1`, { agent, headers: { authorization: `Bearer ${token}` }, timeout }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode === 404 ? undefined : `status ${response.statusCode}`))
      response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    })
    sent.on('timeout', () => sent.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })))
    sent.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    sent.end()
  })
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < end) {
      const failure = await once()
      if (failure === undefined) ok++
      else failures[failure] = (failures[failure] ?? 0) + 1
    }
  }))
  agent.destroy()
  const failed = Object.values(failures).reduce((sum, count) => sum + count, 0)
  return { ok, failures, failed }
}

/** Whether a spawned server is still running. */
export const running = (child: { exitCode: number | null, signalCode: string | null }) => child.exitCode === null && child.signalCode === null
