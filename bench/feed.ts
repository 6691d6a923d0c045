// `npm run bench:feed` (also the end of `npm run bench`): the change feed's lag and its idle streams.
// Part lag: creates at a fixed rate to one instance, a long-polling follower (wait=10, looping on
// `next`) on the same instance, or on a second instance of the same PostgreSQL database; lag is the
// time the follower reads a plant's event minus the time that plant's create got its 200, both on
// this process's clock. Part idle: N Server-Sent Events streams open on one instance: its RSS before
// and after opening them, and its CPU (and on PostgreSQL the database's transactions) over an idle
// window without and with them. `node dist/bench/feed.js --help` lists the options.
import { randomBytes } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { request as httpRequest, type ClientRequest } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Client, Pool } from 'undici'
import { percentile, writeResults } from './report.js'
import { createDatabase, dropDatabase, POSTGRES_ADMIN_URL, postgresUnreachable } from './stores.js'
import { cpuMicros, hasTaskset, killAllNow, rssMiB, startServer, stop, stopAll, type Server } from './targets.js'

const HELP = `Usage: node dist/bench/feed.js [options]
  --rate N       creates per second in part lag (default 1000; --smoke: 100)
  --duration S   seconds of measured creates per lag run, after a 1 s warm-up (default 10; --smoke: 1, no warm-up)
  --streams N    idle event streams in part idle (default 1000; --smoke: 50)
  --idle S       seconds of each idle CPU window (default 10; --smoke: 1)
  --stores LIST  sqlite,postgres (default both)
  --parts LIST   lag,idle (default both)
  --service FILE the service's entry to run (default: this build's dist/server.mjs)
  --smoke        tiny counts: proves the scenario works in seconds
PostgreSQL: BENCH_POSTGRES_URL (default ${POSTGRES_ADMIN_URL}); skipped when unreachable.`

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string' },
    duration: { type: 'string' },
    streams: { type: 'string' },
    idle: { type: 'string' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    parts: { type: 'string', default: 'lag,idle' },
    service: { type: 'string' },
    smoke: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
if (args.help) {
  console.log(HELP)
  process.exit(0)
}
const smoke = args.smoke
const positive = (name: 'rate' | 'duration' | 'streams' | 'idle', fallback: number) => {
  const value = Number(args[name] ?? fallback)
  if (!Number.isSafeInteger(value) || value < 1) {
    console.error(`--${name} must be a positive integer\n\n${HELP}`)
    process.exit(2)
  }
  return value
}
const rate = positive('rate', smoke ? 100 : 1000)
const duration = positive('duration', smoke ? 1 : 10)
const streamCount = positive('streams', smoke ? 50 : 1000)
const idleSeconds = positive('idle', smoke ? 1 : 10)
const warmupSeconds = smoke ? 0 : 1
const stores = new Set(args.stores.split(','))
const parts = new Set(args.parts.split(','))

const SERVICE = args.service ?? fileURLToPath(new URL('../server.mjs', import.meta.url))
const RESULTS_DIR = fileURLToPath(new URL('../../bench/results', import.meta.url))
// The feed caps streams and long-polls per token (100 by default): the streams spread over enough tokens.
const tokens = Array.from({ length: Math.ceil(streamCount / 50) + 1 }, () => randomBytes(24).toString('base64url'))
const [token] = tokens
const tmp = mkdtempSync(join(tmpdir(), 'plant-store-bench-feed-'))
const databases: string[] = []
const startLoad = loadavg()[0]
const progress = (line: string) => process.stderr.write(`${line}\n`)
const fixed = (value: number | null | undefined, digits = 1) => value === null || value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits)

// Targets of issue 37, in ms.
const LAG_LIMITS = { one: { p50: 10, p99: 50 }, two: { p50: 10, p99: 100 } }

const startService = (name: string, databaseUrl: string, nodeOptions: string[] = []) => startServer({
  name,
  script: SERVICE,
  nodeOptions,
  env: { DATABASE_URL: databaseUrl, API_TOKENS: tokens.join(','), LOG_LEVEL: 'info' },
  stderrFile: join(tmp, `${name.replace(/\W+/g, '-')}.stderr.log`)
})

async function postgresDatabase (suffix: string): Promise<string> {
  const name = `plant_store_bench_feed_${randomBytes(4).toString('hex')}_${suffix}`
  databases.push(name)
  return createDatabase(POSTGRES_ADMIN_URL, name)
}

/** The transactions PostgreSQL has counted on a database so far (its statistics are flushed about once a second). */
async function transactions (url: string): Promise<number> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await client.connect()
  try {
    const { rows: [row] } = await client.query<{ n: string }>(
      'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [new URL(url).pathname.slice(1)])
    return Number(row.n)
  } finally {
    await client.end()
  }
}

interface Change { cursor: string, event: { type: string, id: number } }
interface Page { changes: Change[], next: string }

let nextId = 1

interface LagResult {
  name: string
  limits: { p50: number, p99: number }
  sent: number
  ok: number
  failed: number
  /** Events of measured creates the follower read. */
  seen: number
  ratePerSec: number
  p50: number | null
  p99: number | null
  max: number | null
  /** Events the follower never read that paging the feed from its start finds. */
  skipped: number
  /** Events the follower read before the create's 200 arrived (a negative lag). */
  early: number
  createP99: number | null
}

/** Creates at `rate`/s to `writer` for the warm-up and `duration`, followed by a long-poll on `reader`. */
async function lag (name: string, writer: Server, reader: Server, limits: { p50: number, p99: number }): Promise<LagResult> {
  const auth = { authorization: `Bearer ${token}` }
  const follower = new Client(reader.url)
  const readPage = async (after: string | undefined, wait: number, signal?: AbortSignal) => {
    const from = after === undefined ? '' : `&after=${encodeURIComponent(after)}`
    const { statusCode, body } = await follower.request({
      method: 'GET', path: `/plants/changes?wait=${wait}&limit=1000${from}`, headers: auth, signal
    })
    const text = await body.text()
    if (statusCode !== 200) throw new Error(`GET /plants/changes: ${statusCode} ${text.slice(0, 200)}`)
    return { page: JSON.parse(text) as Page, at: performance.now() }
  }
  const okAt = new Map<number, number>()
  const seenAt = new Map<number, number>()
  const following = new AbortController()
  let { page: { next } } = await readPage('now', 0)
  const followed = (async () => {
    while (!following.signal.aborted) {
      const { page, at } = await readPage(next, 10, following.signal)
      for (const { event } of page.changes) if (event.type === 'plant.created') seenAt.set(event.id, at)
      next = page.next
    }
  })().catch((error: Error) => { if (!following.signal.aborted) throw error })

  const creates = new Pool(writer.url, { connections: 50 })
  const headers = { ...auth, 'content-type': 'application/json' }
  const measured = new Set<number>()
  const createMs: number[] = []
  let failed = 0
  const inFlight = new Set<Promise<void>>()
  const create = (counted: boolean) => {
    const id = nextId++
    if (counted) measured.add(id)
    const sentAt = performance.now()
    const done = creates.request({ method: 'POST', path: '/plants', headers, body: `{"id":${id},"name":"Monstera","tag":"tropical"}` })
      .then(async ({ statusCode, body }) => {
        const at = performance.now()
        await body.dump()
        if (statusCode !== 200) {
          failed++
          return
        }
        okAt.set(id, at)
        if (counted) createMs.push(at - sentAt)
      }, () => { failed++ })
      .finally(() => inFlight.delete(done))
    inFlight.add(done)
  }
  // A paced loop: each tick sends the creates due by then, so the rate holds even when a tick is late.
  const total = rate * (warmupSeconds + duration)
  const warmup = rate * warmupSeconds
  const startedAt = performance.now()
  let sent = 0
  let measuredFrom = startedAt
  while (sent < total) {
    const due = Math.min(total, Math.floor((performance.now() - startedAt) * rate / 1000) + 1)
    while (sent < due) {
      if (sent === warmup) measuredFrom = performance.now()
      create(sent++ >= warmup)
    }
    await sleep(1)
  }
  const ratePerSec = (total - warmup) / ((performance.now() - measuredFrom) / 1000)
  await Promise.all(inFlight)
  // The last events: up to 5 s for the follower to read them all.
  const waitUntil = performance.now() + 5000
  while ([...measured].some((id) => okAt.has(id) && !seenAt.has(id)) && performance.now() < waitUntil) await sleep(20)
  following.abort()
  await followed
  // Events the follower never read: are they in the feed when it is paged from its start (the follow skipped them)?
  const unseen = [...measured].filter((id) => okAt.has(id) && !seenAt.has(id))
  let skipped = 0
  if (unseen.length > 0) {
    const all = new Set<number>()
    for (let after: string | undefined, n = -1; n !== 0;) {
      const { page } = await readPage(after, 0)
      for (const { event } of page.changes) all.add(event.id)
      ;[after, n] = [page.next, page.changes.length]
    }
    skipped = unseen.filter((id) => all.has(id)).length
    progress(`${name}: ${unseen.length} events not read by the follower, ${skipped} of them in the feed paged from its start; ` +
      `unread ids ${unseen.slice(0, 20).join(', ')}${unseen.length > 20 ? ', …' : ''}`)
  }
  await Promise.all([follower.close(), creates.close()])

  const lags: number[] = []
  for (const id of measured) {
    const [ok, seen] = [okAt.get(id), seenAt.get(id)]
    if (ok !== undefined && seen !== undefined) lags.push(seen - ok)
  }
  return {
    name,
    limits,
    sent: measured.size,
    ok: [...measured].filter((id) => okAt.has(id)).length,
    failed,
    seen: lags.length,
    ratePerSec,
    p50: percentile(lags, 50),
    p99: percentile(lags, 99),
    max: lags.length === 0 ? null : Math.max(...lags),
    early: lags.filter((ms) => ms < 0).length,
    skipped,
    createP99: percentile(createMs, 99)
  }
}

interface IdleResult {
  name: string
  streams: number
  rssBeforeMiB: number
  rssAfterMiB: number
  kibPerStream: number
  /** Server CPU over the idle window, in ms: without streams, and with them open. */
  cpuWithoutMs: number
  cpuWithMs: number
  /** The server's CPU in each second of the window with the streams, in ms. */
  secondsWithMs: number[]
  /** The database's transactions over the same windows (PostgreSQL only). */
  xactsWithout?: number
  xactsWith?: number
  /** Heartbeat comments the streams received during the window with them. */
  heartbeats: number
}

/** Opens one event stream from the head; resolves once its 200 head arrived. */
function openStream (server: Server, who: string, onData: (chunk: string) => void): Promise<ClientRequest> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${server.url}/plants/changes?after=now`, {
      agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${who}` }
    }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`event stream: ${response.statusCode}`))
        response.resume()
        return
      }
      response.setEncoding('utf8').on('data', onData)
      resolve(request)
    })
    request.once('error', reject)
    request.end()
  })
}

async function idle (name: string, server: Server, databaseUrl?: string): Promise<IdleResult> {
  const xacts = async () => databaseUrl === undefined ? Number.NaN : transactions(databaseUrl)
  // Second by second: work every second (the idle read) shows in each, the heartbeat's in one.
  const window = async () => {
    const [cpu, before] = [cpuMicros(server.pid), await xacts()]
    const seconds: number[] = []
    for (let last = cpu; seconds.length < idleSeconds;) {
      await sleep(1000)
      const now = cpuMicros(server.pid)
      seconds.push((now - last) / 1000)
      last = now
    }
    const cpuMs = (cpuMicros(server.pid) - cpu) / 1000
    return { cpuMs, seconds, xacts: databaseUrl === undefined ? undefined : await xacts() - before }
  }
  let heartbeats = 0
  let counting = false
  const onData = (chunk: string) => { if (counting) heartbeats += chunk.split(': heartbeat').length - 1 }
  const open: ClientRequest[] = []
  // 100 at a time: the server's accept queue is not what is measured.
  const openStreams = async (n: number) => {
    for (let i = 0; i < n; i += 100) {
      const batch = Array.from({ length: Math.min(100, n - i) }, (_, j) => openStream(server, tokens[1 + ((i + j) % (tokens.length - 1))], onData))
      open.push(...await Promise.all(batch))
    }
  }
  // Settled after its start-up: its first idle window is the one to compare with.
  await sleep(smoke ? 1000 : 3000)
  const without = await window()
  const rssBeforeMiB = rssMiB(server.pid)
  try {
    await openStreams(streamCount)
    // PostgreSQL counts a backend's transactions when it next flushes its statistics: up to 10 s later for one
    // gone idle (PGSTAT_IDLE_INTERVAL), so the opening reads are let settle out of the window.
    await sleep(smoke ? 1000 : 11_000)
    const rssAfterMiB = rssMiB(server.pid)
    counting = true
    const withStreams = await window()
    return {
      name,
      streams: open.length,
      rssBeforeMiB,
      rssAfterMiB,
      kibPerStream: (rssAfterMiB - rssBeforeMiB) * 1024 / open.length,
      cpuWithoutMs: without.cpuMs,
      cpuWithMs: withStreams.cpuMs,
      secondsWithMs: withStreams.seconds,
      xactsWithout: without.xacts,
      xactsWith: withStreams.xacts,
      heartbeats
    }
  } finally {
    for (const request of open) request.destroy()
  }
}

const lagResults: LagResult[] = []
const idleResults: IdleResult[] = []
const notes: string[] = []
const failures: string[] = []

async function measureStore (store: string, url: () => Promise<string>) {
  try {
    await measureParts(store, url)
  } catch (error) {
    failures.push(`${store}: ${(error as Error).message}`)
    progress(`FAILED: ${store}: ${(error as Error).stack}`)
    await stopAll()
  }
}

async function measureParts (store: string, url: () => Promise<string>) {
  if (parts.has('lag')) {
    const server = await startService(store, await url())
    progress(`${store}: lag at ${rate}/s for ${warmupSeconds} + ${duration} s, follower on the same instance …`)
    lagResults.push(await lag(`${store}, one instance`, server, server, LAG_LIMITS.one))
    await stop(server)
    if (store === 'postgres') {
      const shared = await url()
      const [a, b] = [await startService('postgres A', shared), await startService('postgres B', shared)]
      progress(`${store}: lag at ${rate}/s, creates to instance A, follower on instance B …`)
      lagResults.push(await lag('postgres, two instances', a, b, LAG_LIMITS.two))
      await Promise.all([stop(a), stop(b)])
    }
  }
  if (parts.has('idle')) {
    const databaseUrl = await url()
    // V8 gives idle heap pages back after a while (its memory reducer): an RSS that shrinks while the
    // streams open would hide what they hold.
    const server = await startService(`${store} streams`, databaseUrl, ['--no-memory-reducer'])
    progress(`${store}: ${streamCount} idle event streams, ${idleSeconds} s idle without and with them …`)
    idleResults.push(await idle(store, server, store === 'postgres' ? databaseUrl : undefined))
    await stop(server)
  }
}

function report (): string {
  const lines = [`Change feed: lag at ${rate} creates/s over ${duration} s (after ${warmupSeconds} s of warm-up), follower long-polling with wait=10`]
  const header = ['run', 'creates', 'rate/s', 'failed', 'seen', 'lag p50 ms', 'p99 ms', 'max ms', 'early', 'POST p99 ms']
  const rows = lagResults.map((r) => [r.name, String(r.sent), fixed(r.ratePerSec, 0), String(r.failed), String(r.seen),
    fixed(r.p50, 2), fixed(r.p99, 2), fixed(r.max, 2), String(r.early), fixed(r.createP99, 2)])
  const idleHeader = ['idle streams', 'streams', 'RSS before MiB', 'after MiB', 'KiB/stream', `CPU ms/${idleSeconds} s without`, 'with', 'db xacts without', 'with', 'heartbeats']
  const idleRows = idleResults.map((r) => [r.name, String(r.streams), fixed(r.rssBeforeMiB), fixed(r.rssAfterMiB), fixed(r.kibPerStream),
    fixed(r.cpuWithoutMs, 0), fixed(r.cpuWithMs, 0), fixed(r.xactsWithout, 0), fixed(r.xactsWith, 0), String(r.heartbeats)])
  const tableOf = (head: string[], body: string[][]) => {
    const widths = head.map((title, i) => Math.max(title.length, ...body.map((row) => row[i].length)))
    const line = (cells: string[]) => cells.map((cell, i) => i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])).join('  ')
    return [line(head), line(widths.map((width) => '-'.repeat(width))), ...body.map(line)]
  }
  if (rows.length > 0) lines.push(...tableOf(header, rows))
  if (idleRows.length > 0) lines.push('', ...tableOf(idleHeader, idleRows))
  lines.push('', 'Targets (issue 37):')
  for (const r of lagResults) {
    for (const key of ['p50', 'p99'] as const) {
      const value = r[key]
      const met = value !== null && value <= r.limits[key] && r.seen === r.sent && r.failed === 0
      lines.push(`${met ? 'met   ' : 'MISSED'} ${r.name} lag ${key} ${fixed(value, 2)} ms (≤ ${r.limits[key]} ms` +
        `${r.seen === r.sent ? '' : `; ${r.sent - r.seen} of ${r.sent} events not read, ${r.skipped} of them in the feed from its start`}${r.failed === 0 ? '' : `; ${r.failed} creates failed`})`)
    }
  }
  for (const r of idleResults) {
    lines.push(`info   ${r.name} ${r.streams} idle streams: ${fixed(r.kibPerStream)} KiB of RSS per stream; idle CPU ${fixed(r.cpuWithMs, 0)} ms ` +
      `over ${idleSeconds} s with them (ms each second: ${r.secondsWithMs.map((ms) => ms.toFixed(0)).join(' ')}), ${fixed(r.cpuWithoutMs, 0)} ms without`)
    // One store read a second serves every waiter: a read per stream would be streams × seconds transactions.
    if (r.xactsWith !== undefined && r.xactsWithout !== undefined) {
      const perSecond = (r.xactsWith - r.xactsWithout) / idleSeconds
      const met = perSecond <= 2
      // A smoke run's short windows see the statistics of the streams' opening reads still coming in.
      lines.push(`${smoke ? 'info  ' : met ? 'met   ' : 'MISSED'} ${r.name} no per-stream timer work while idle: ${fixed(perSecond)} more database transactions/s ` +
        `with ${r.streams} streams than without (≤ 2: the feed's one idle read a second for all waiters)`)
    }
  }
  lines.push('',
    'Lag: the follower reading a plant\'s event minus that create\'s 200 arriving, both on this process\'s clock; "early": events read ' +
      'before their 200 arrived (a negative lag). Servers pinned to core 0, this process to core 1 where taskset exists; PostgreSQL unpinned.',
    'Timers while idle (plugins/feed): one heartbeat timer for all streams (every 15 s), one idle read for all waiters (every 1 s), ' +
      'and each stream\'s wait holds one timeout that fires only when its lifetime (5 min) ends.',
    // Other work on the machine skews every figure, the lag's tail first.
    `load average (1 min) at start ${startLoad.toFixed(2)}, at end ${loadavg()[0].toFixed(2)}`,
    ...notes, ...failures.map((failure) => `FAILED: ${failure}`))
  return lines.join('\n') + '\n'
}

async function main () {
  if (hasTaskset) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)])
  progress(`plant-store feed bench: ${rate} creates/s × ${duration} s, ${streamCount} streams, ${idleSeconds} s idle${smoke ? ' (smoke)' : ''}; work dir ${tmp}`)
  let sqliteFiles = 0
  if (stores.has('sqlite')) await measureStore('sqlite', async () => `sqlite:${join(tmp, `feed-${sqliteFiles++}.db`)}`)
  if (stores.has('postgres')) {
    const unreachable = await postgresUnreachable(POSTGRES_ADMIN_URL)
    if (unreachable === undefined) {
      let n = 0
      await measureStore('postgres', () => postgresDatabase(String(n++)))
    } else {
      notes.push(`postgres: skipped, no PostgreSQL server answers at ${POSTGRES_ADMIN_URL} (${unreachable})`)
    }
  }
  process.stdout.write(report())
  const started = new Date()
  const file = writeResults(join(RESULTS_DIR, 'feed'), started, { kind: 'feed', started, options: { rate, duration, streamCount, idleSeconds, smoke }, lag: lagResults, idle: idleResults, notes })
  progress(`figures written to ${file}`)
}

async function cleanup () {
  await stopAll()
  for (const name of databases) {
    await dropDatabase(POSTGRES_ADMIN_URL, name).catch((error: Error) => progress(`could not drop database ${name}: ${error.message}`))
  }
  rmSync(tmp, { recursive: true, force: true })
}

process.once('exit', () => {
  killAllNow()
  rmSync(tmp, { recursive: true, force: true })
})
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => { cleanup().finally(() => process.exit(code)) })
}

try {
  await main()
  process.exitCode = failures.length > 0 ? 1 : 0
} catch (error) {
  console.error(error)
  process.exitCode = 1
} finally {
  await cleanup()
}
