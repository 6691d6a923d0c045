import { performance } from 'node:perf_hooks'
import type { Test } from 'tap'
import { isStoreUnavailable, type Answer } from './load.js'
import type { LogLine, SpawnedServer } from './server-process.js'

/** The log lines about failed requests: one per fault class and second, and the summaries. */
export const failureLines = (logs: LogLine[]) => logs.filter(({ msg }) => msg?.startsWith('request failed') === true)

/** The log lines about the store's readiness (they say what /readyz answers). */
export const isReadinessLine = ({ msg }: LogLine) => msg?.includes('/readyz') === true
export const readinessLines = (logs: LogLine[]) => logs.filter(isReadinessLine)

/** How many failed requests the failure lines account for: a line each, a summary the repeats it counts. */
export const accountedFor = (lines: LogLine[]) => lines.reduce((sum, { repeated }) => sum + Number(repeated ?? 1), 0)

/** Runs `request` from `concurrency` loops for `ms` milliseconds: every answer, and how long it took. */
export async function flood (ms: number, concurrency: number, request: (index: number) => Promise<Answer>) {
  const start = performance.now()
  const answers: Answer[] = []
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() - start < ms) answers.push(await request(next++))
  }))
  return { answers, seconds: (performance.now() - start) / 1000 }
}

/**
 * Sends `request` for `ms` ms against a store that is down and checks what the log says of it:
 * at most a line a second (with a wide margin), none with a stack, and every 503 accounted for by
 * a line or a summary's count. Returns the log's bytes per second meanwhile.
 */
export async function assertFaultsSummarised (t: Test, server: SpawnedServer, ms: number, request: (index: number) => Promise<Answer>) {
  const before = failureLines(server.logs()).length
  const bytesBefore = Buffer.byteLength(server.stdout())
  const { answers, seconds } = await flood(ms, 8, request)
  const bytesPerSecond = Math.round((Buffer.byteLength(server.stdout()) - bytesBefore) / seconds)
  const failed = answers.filter(isStoreUnavailable).length
  t.equal(failed, answers.length, `every one of ${answers.length} requests answered 503, the store is unavailable`)
  // The last repeats are summed up once their second is over: a log line to wait for (the check below says if it never came).
  await server.waitForLog(() => accountedFor(failureLines(server.logs()).slice(before)) >= failed, 10_000).catch(() => {})
  const lines = failureLines(server.logs()).slice(before)
  t.comment(`${failed} failed requests in ${seconds.toFixed(1)} s: ${lines.length} log lines, ${bytesPerSecond} log bytes/s`)
  t.equal(accountedFor(lines), failed, `each failed request is logged or counted in a summary, once (${accountedFor(lines)} of ${failed})`, { lines: lines.map(({ msg }) => msg) })
  t.ok(lines.length <= Math.ceil(seconds) + 2, `at most about one line a second (${lines.length} in ${seconds.toFixed(1)} s)`)
  t.ok(lines.some(({ repeated }) => Number(repeated) > 0), 'a summary counts the repeats')
  t.notOk(lines.some((line) => JSON.stringify(line).includes('stack')), 'no line carries a stack', { line: lines[0] })
  return bytesPerSecond
}
