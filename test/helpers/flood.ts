import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Test } from 'tap'
import { pool } from './load.js'
import { exitWithin, type ServerProcess } from './server-process.js'

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

/** How many of `count` fresh requests (GET `path`, GET /healthz by default), `concurrency` at a time, were answered `status` in time. */
export async function freshAnswered (url: string, token: string, count: number, concurrency: number, timeout: number, path = '/healthz', status = 200): Promise<number> {
  let ok = 0
  await pool(count, concurrency, async () => {
    if (await answeredFresh(url, token, path, status, timeout)) ok++
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

/** What legitimate clients got while a flood ran: fresh requests answered of those sent, a keep-alive client's run. */
export interface Served { fresh: number, sent: number, client: ClientRun, duration: number }

/**
 * Asserts that a flood shut no one out: at least 95 % of the fresh requests and of the keep-alive
 * client's were answered; then that the process still runs and SIGTERM stops it cleanly.
 */
export async function assertServed (t: Test, server: ServerProcess, { fresh, sent, client, duration }: Served) {
  const attempts = client.ok + client.failed
  t.comment(`fresh requests answered: ${fresh} of ${sent}; keep-alive client: ${client.ok} of ${attempts} requests succeeded in ${duration} ms, failures ${JSON.stringify(client.failures)}`)
  t.ok(fresh / sent >= 0.95, 'at least 95 % of fresh requests are answered')
  t.ok(client.ok / attempts >= 0.95, 'at least 95 % of the keep-alive client\'s requests succeed')
  t.ok(running(server.child), 'the process is still running')
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 20_000), { code: 0, signal: null }, 'SIGTERM still stops it cleanly: exit 0')
}
