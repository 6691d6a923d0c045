// The benchmark: POST /plants (and PUT /plants/{id}) on the real service (memory, SQLite, PostgreSQL) against two
// baselines, a bare node:http server and a plain Fastify app, interleaved round by round. `node dist/bench/run.js --help` lists the options.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon, { type Instance } from 'autocannon'
import {
  BASELINES, EXPECTED_STATUS, PATH_LABEL, compare, percentile, summarize, table, writeResults, type Comparison, type Path, type Run
} from './report.js'
import { headersFor, requestFor, seedUpdatePool } from './requests.js'
import {
  createDatabase, dropDatabase, POSTGRES_ADMIN_URL, postgresUnreachable, preloadPostgres, preloadSqlite, preparePgbench, runPgbench
} from './stores.js'
import {
  BASELINE_ENTRIES, StartError, cpuMicros, hasTaskset, killAllNow, peakRssMiB, spawnTracked, startServer, stop, stopAll, type Server
} from './targets.js'

// The bundle npm start runs: the service as it ships.
const BUNDLE = fileURLToPath(new URL('../server.mjs', import.meta.url))
const STORES = ['memory', 'sqlite', 'postgres']
const RESULTS_DIR = fileURLToPath(new URL('../../bench/results', import.meta.url))
const FEED_BENCH = fileURLToPath(new URL('./feed.js', import.meta.url))

const HELP = `Usage: node dist/bench/run.js [options]
  --rounds N       rounds of runs, interleaved across targets (default 5; --smoke: 1)
  --duration S     seconds per create run (default 10; --smoke: 1)
  --connections N  concurrent connections, also pgbench's clients (default 50)
  --preload N      plants stored before measuring the preloaded SQLite and PostgreSQL targets
                   (default 1000000; --smoke: 0; 0 leaves those targets out)
  --stores LIST    the service's stores to measure, comma-separated (default ${STORES.join(',')})
  --service FILE   the service's entry to run (default: this build's dist/server.mjs), e.g. another
                   commit's build, measured with this bench and its baselines
  --compare FILE   another build's entry, run beside the service on memory and SQLite, in the same
                   rounds, as "memory (compare)" and "sqlite (compare)": before/after in one run
  --smoke          a seconds-long run that only proves the bench works
  --skip-feed      leave out the change feed's scenario (bench/feed.ts, npm run bench:feed) that runs
                   at the end on SQLite and PostgreSQL (about 2 minutes; --smoke: its smoke variant)
PostgreSQL: BENCH_POSTGRES_URL (default ${POSTGRES_ADMIN_URL}); skipped when unreachable.`

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    preload: { type: 'string' },
    stores: { type: 'string' },
    service: { type: 'string' },
    compare: { type: 'string' },
    smoke: { type: 'boolean', default: false },
    'skip-feed': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
if (args.help) {
  console.log(HELP)
  process.exit(0)
}

function integer (name: 'rounds' | 'duration' | 'connections' | 'preload', fallback: number, min: number): number {
  if (args[name] === undefined) return fallback
  const value = Number(args[name])
  if (!Number.isSafeInteger(value) || value < min) {
    console.error(`--${name} must be an integer of at least ${min}\n\n${HELP}`)
    process.exit(2)
  }
  return value
}

const smoke = args.smoke
const rounds = integer('rounds', smoke ? 1 : 5, 1)
const duration = integer('duration', smoke ? 1 : 10, 1)
const connections = integer('connections', 50, 1)
const preload = integer('preload', smoke ? 0 : 1_000_000, 0)
const stores = new Set(args.stores?.split(',') ?? STORES)
if ([...stores].some((store) => !STORES.includes(store))) {
  console.error(`--stores takes some of ${STORES.join(',')}\n\n${HELP}`)
  process.exit(2)
}
const SERVER_ENTRY = args.service ?? BUNDLE
const startupRuns = smoke ? 2 : 5
const warmupSeconds = smoke ? 0 : Math.min(2, duration)
// The int64, 400 and 401 paths: short runs on the baselines and memory.
const shortSeconds = Math.max(1, Math.round(duration / 5))

const token = randomBytes(24).toString('base64url')
const started = new Date()
const startLoad = loadavg()
const runs: Run[] = []
const startupMs: number[] = []
const failures: string[] = []
const notes: string[] = []
const databases: string[] = []
let tmp: string | undefined
let current: Instance | undefined
let interrupted = false

/** Thrown on the way out after SIGINT or SIGTERM, so that nothing else starts. */
class Interrupted extends Error {}
function checkInterrupted () {
  if (interrupted) throw new Interrupted('interrupted')
}

interface HttpTarget { kind: 'http', name: string, server: Server }
interface PgbenchTarget { kind: 'pgbench', name: 'pgbench', url: string, script: string }
type Target = HttpTarget | PgbenchTarget

const progress = (line: string) => process.stderr.write(`${line}\n`)

function fail (message: string, detail = '') {
  failures.push(message)
  progress(`FAILED: ${message}${detail && `\n${detail.replace(/^/gm, '    ')}`}`)
}

const count = (n: number) => n % 1e6 === 0 ? `${n / 1e6}M` : n % 1e3 === 0 ? `${n / 1e3}k` : String(n)
const fixed = (value: number | null, digits = 0) => value === null ? '-' : value.toFixed(digits)

async function start (name: string, script: string, env: Record<string, string>): Promise<Server | undefined> {
  const stderrFile = join(tmp!, `${name}.stderr.log`)
  checkInterrupted()
  try {
    const server = await startServer({ name, script, env, stderrFile })
    progress(`started ${name} in ${server.startMs.toFixed(0)} ms (pid ${server.pid})`)
    return server
  } catch (error) {
    checkInterrupted()
    if (!(error instanceof StartError)) throw error
    // A PostgreSQL store the service cannot open yet (e.g. still being wired) is left out, not a failure.
    if (env.DATABASE_URL?.startsWith('postgres') && error.stderr.includes('DATABASE_URL')) {
      notes.push(`${name}: skipped, the service cannot open PostgreSQL: ${error.stderr.split('\n').at(-1)}`)
      progress(`SKIPPED: ${error.message}\n    ${error.stderr}`)
    } else {
      fail(error.message, error.stderr)
    }
    return undefined
  }
}

const startService = (name: string, store: string, entry = SERVER_ENTRY, env: Record<string, string> = {}) =>
  start(name, entry, { DATABASE_URL: store, API_TOKENS: token, LOG_LEVEL: 'info', ...env })
// The same service with its change feed off: the feed's cost is the ratio of the two.
const FEED_OFF = { FEED: 'off' }

async function measure ({ name, server }: HttpTarget, path: Path, round: number, seconds: number): Promise<Run> {
  const cpuBefore = cpuMicros(server.pid)
  const headers = headersFor(path, token)
  current = autocannon({
    url: `${server.url}/plants`, method: 'POST', connections, duration: seconds, headers, requests: [requestFor(path, preload)]
  })
  // autocannon's own histogram counts whole milliseconds: at 2-3 ms a p99 ratio would be 1.0 or 1.5.
  const latencies: number[] = []
  current.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms))
  const result = await current
  current = undefined
  const cpu = cpuMicros(server.pid) - cpuBefore
  const requests = result.requests.total
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]))
  const expected = statusCodes[EXPECTED_STATUS[path]] ?? 0
  return {
    target: name,
    path,
    round,
    seconds: result.duration,
    requests,
    reqPerSec: requests / result.duration,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    cpuUsPerRequest: requests > 0 ? cpu / requests : null,
    peakRssMiB: peakRssMiB(server.pid),
    non2xx: result.non2xx,
    unexpected: requests - expected,
    errors: result.errors,
    statusCodes
  }
}

async function measurePgbench ({ url, script }: PgbenchTarget, round: number): Promise<Run> {
  const result = await runPgbench(url, script, connections, duration)
  return {
    target: 'pgbench',
    path: 'create',
    round,
    seconds: duration,
    requests: result.transactions,
    reqPerSec: result.tps,
    p50Ms: null,
    p99Ms: null,
    cpuUsPerRequest: null,
    peakRssMiB: null,
    non2xx: 0,
    unexpected: result.failed,
    errors: 0,
    statusCodes: {},
    details: { latencyAverageMs: result.latencyAverageMs }
  }
}

/** Stores the plants the update runs replace. */
async function seedUpdates ({ name, server }: HttpTarget) {
  checkInterrupted()
  const failure = await seedUpdatePool(server.url, token)
  if (failure !== undefined) fail(`${name}: ${failure}`)
}

/** One run, recorded; a run that failed or got no expected answer at all counts as a failure. */
async function runOnce (target: Target, path: Path, round: number, seconds: number, record = true) {
  const label = `${target.name} ${target.kind === 'pgbench' ? 'INSERT' : PATH_LABEL[path]}`
  checkInterrupted()
  process.stderr.write(`${round === 0 ? '[warm-up]' : `[round ${round}/${rounds}]`} ${label} for ${seconds} s … `)
  try {
    const run = target.kind === 'pgbench' ? await measurePgbench(target, round) : await measure(target, path, round, seconds)
    progress(target.kind === 'pgbench'
      ? `${fixed(run.reqPerSec)} tps, latency average ${fixed(run.details?.latencyAverageMs ?? null, 1)} ms, failed ${run.unexpected}`
      : `${fixed(run.reqPerSec)} req/s, p99 ${fixed(run.p99Ms, 1)} ms, CPU ${fixed(run.cpuUsPerRequest, 1)} µs/req, ` +
        `unexpected ${run.unexpected}, errors ${run.errors}`)
    if (run.requests === run.unexpected) fail(`${label}, round ${round}: no response of the expected kind (${JSON.stringify(run.statusCodes)}, ${run.errors} errors)`)
    if (record) runs.push(run)
  } catch (error) {
    progress('')
    checkInterrupted()
    fail(`${label}, round ${round}: ${(error as Error).message}`)
  }
}

async function addPostgres (targets: Target[]) {
  const unreachable = await postgresUnreachable(POSTGRES_ADMIN_URL)
  if (unreachable !== undefined) {
    notes.push(`postgres: skipped, no PostgreSQL server answers at ${POSTGRES_ADMIN_URL} (${unreachable})`)
    return
  }
  const prefix = `plant_store_bench_${randomBytes(4).toString('hex')}`
  const database = async (suffix: string) => {
    const name = `${prefix}_${suffix}`
    databases.push(name)
    return createDatabase(POSTGRES_ADMIN_URL, name)
  }
  const emptyUrl = await database('empty')
  const empty = await startService('postgres', emptyUrl)
  if (empty) targets.push({ kind: 'http', name: 'postgres', server: empty })
  const feedOff = await startService('postgres (feed off)', await database('feed_off'), SERVER_ENTRY, FEED_OFF)
  if (feedOff) targets.push({ kind: 'http', name: 'postgres (feed off)', server: feedOff })
  if (preload > 0) {
    const name = `postgres+${count(preload)}`
    const url = await database('preloaded')
    // The service creates its table at start-up; the plants go in while it is idle.
    const server = await startService(name, url)
    if (server) {
      checkInterrupted()
      progress(`preloading ${preload} plants into ${name}`)
      await preloadPostgres(url, preload)
      targets.push({ kind: 'http', name, server })
    }
  }
  if (spawnSync('pgbench', ['--version']).status === 0) {
    targets.push({ kind: 'pgbench', name: 'pgbench', url: emptyUrl, script: await preparePgbench(emptyUrl, join(tmp!, 'insert.sql')) })
  } else {
    notes.push('pgbench: not found, no PostgreSQL limit measured')
  }
}

async function main () {
  tmp = mkdtempSync(join(tmpdir(), 'plant-store-bench-'))
  // The generator and pgbench (children inherit this affinity) on core 1, the servers on core 0.
  if (hasTaskset && spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)]).status === 0) {
    notes.push('CPU pinning: servers on core 0, autocannon and pgbench on core 1 (PostgreSQL itself unpinned)')
  } else {
    notes.push('CPU pinning: none (taskset missing or failed): server and generator share the cores')
  }
  progress(`plant-store bench: ${rounds} round(s) × ${duration} s, ${connections} connections, preload ${preload}` +
    `${smoke ? ' (smoke)' : ''}; work dir ${tmp}`)

  for (let i = 1; i <= startupRuns; i++) {
    checkInterrupted()
    const store = `sqlite:${join(tmp, `startup-${i}.db`)}`
    try {
      const server = await startServer({
        name: 'start-up',
        script: SERVER_ENTRY,
        env: { DATABASE_URL: store, API_TOKENS: token, LOG_LEVEL: 'info' },
        stderrFile: join(tmp, 'startup.stderr.log'),
        readyPath: '/healthz',
        pollMs: 2
      })
      startupMs.push(server.startMs)
      progress(`[start-up ${i}/${startupRuns}] ${server.startMs.toFixed(1)} ms to the first 200 of GET /healthz`)
      await stop(server)
    } catch (error) {
      checkInterrupted()
      if (!(error instanceof StartError)) throw error
      fail(error.message, error.stderr)
      break
    }
  }

  const targets: Target[] = []
  const add = (name: string, server: Server | undefined) => { if (server) targets.push({ kind: 'http', name, server }) }
  for (const baseline of BASELINES) add(baseline, await start(baseline, BASELINE_ENTRIES[baseline], { TOKEN: token }))
  // The int64 path runs on a memory store of its own: its ids sort after every small id, so on a
  // shared store the small ids of later create runs would each need a search instead of the
  // append that ids above every other get: each store sees ids that grow, as clients send them.
  const int64Servers = new Map<string, Server>()
  const builds: Array<[string, string]> = [['', SERVER_ENTRY], ...(args.compare ? [[' (compare)', args.compare] as [string, string]] : [])]
  for (const [suffix, entry] of builds) {
    if (stores.has('memory')) {
      add(`memory${suffix}`, await startService(`memory${suffix}`, 'memory:', entry))
      if (suffix === '') add('memory (feed off)', await startService('memory (feed off)', 'memory:', entry, FEED_OFF))
      const int64 = await startService(`memory${suffix} (int64)`, 'memory:', entry)
      if (int64) int64Servers.set(`memory${suffix}`, int64)
    }
    if (stores.has('sqlite')) add(`sqlite${suffix}`, await startService(`sqlite${suffix}`, `sqlite:${join(tmp, `empty${suffix.length}.db`)}`, entry))
    if (stores.has('sqlite') && suffix === '') {
      add('sqlite (feed off)', await startService('sqlite (feed off)', `sqlite:${join(tmp, 'feed-off.db')}`, entry, FEED_OFF))
    }
  }
  if (stores.has('sqlite') && preload > 0) {
    const name = `sqlite+${count(preload)}`
    const file = join(tmp, 'preloaded.db')
    // Started once so that it creates the schema, then stopped: the file is filled while closed.
    const schema = await startService(name, `sqlite:${file}`)
    if (schema) {
      await stop(schema)
      checkInterrupted()
      progress(`preloading ${preload} plants into ${name}`)
      preloadSqlite(file, preload)
      add(name, await startService(name, `sqlite:${file}`))
    }
  }
  if (stores.has('postgres')) await addPostgres(targets)

  const httpTargets = targets.filter((target): target is HttpTarget => target.kind === 'http')
  if (warmupSeconds > 0) {
    for (const target of httpTargets) await runOnce(target, 'create', 0, warmupSeconds, false)
    for (const [name, server] of int64Servers) await runOnce({ kind: 'http', name: `${name} (int64)`, server }, 'create64', 0, warmupSeconds, false)
  }
  const shortTargets = httpTargets.filter(({ name }) => (BASELINES as readonly string[]).includes(name) || name.startsWith('memory'))
  // PUT on this build's service on each store, next to its POST: the plants it replaces stored first.
  const updateTargets = httpTargets.filter(({ name }) => STORES.includes(name))
  for (const target of updateTargets) await seedUpdates(target)
  // A page of the list on the durable stores, empty and preloaded: its time must not grow with the store.
  const listTargets = httpTargets.filter(({ name }) => /^(sqlite|postgres)(\+\S+)?$/.test(name))
  for (let round = 1; round <= rounds; round++) {
    // A PUT run beside its store's POST run, first and second in turn: the memory store's heap grows
    // with every create run, and its garbage collection would weigh on whichever path ran later.
    for (const target of targets) {
      const paths = (updateTargets as Target[]).includes(target) ? (round % 2 === 0 ? ['update', 'create'] as const : ['create', 'update'] as const) : ['create'] as const
      for (const path of paths) await runOnce(target, path, round, duration)
    }
    for (const path of ['create64', 'invalid', 'anonymous'] as const) {
      for (const target of shortTargets) {
        const int64 = path === 'create64' ? int64Servers.get(target.name) : undefined
        await runOnce(int64 ? { ...target, server: int64 } : target, path, round, shortSeconds)
      }
    }
    for (const target of listTargets) await runOnce(target, 'list', round, shortSeconds)
  }

  const summaries = summarize(runs)
  const comparisons = [
    compare(summaries, 'sqlite', 'memory'),
    ...STORES.map((store) => compare(summaries, store, `${store} (feed off)`)),
    // This build, with and without the change feed, against another (--compare).
    ...STORES.flatMap((store) => [store, `${store} (feed off)`].map((name) => compare(summaries, name, `${store} (compare)`))),
    compare(summaries, `sqlite+${count(preload)}`, 'sqlite'),
    compare(summaries, 'postgres', 'pgbench'),
    compare(summaries, `postgres+${count(preload)}`, 'postgres'),
    compare(summaries, `postgres+${count(preload)}`, 'pgbench'),
    compare(summaries, `sqlite+${count(preload)}`, 'sqlite', 'list'),
    compare(summaries, `postgres+${count(preload)}`, 'postgres', 'list'),
    ...STORES.map((store) => compare(summaries, store, store, 'update', 'create'))
  ].filter((comparison): comparison is Comparison => comparison !== undefined)
  const allNotes = [
    'CPU µs/req: utime+stime of the server process ÷ requests completed (PostgreSQL\'s own CPU not included); ' +
      'RSS: its peak (VmHWM) since start, which grows with the plants stored across rounds',
    // Other work on the machine skews every figure: worth seeing next to them.
    `load average (1 min) at start ${startLoad[0].toFixed(2)}, at end ${loadavg()[0].toFixed(2)}, on ${cpus().length} CPUs`,
    ...notes,
    ...failures.map((failure) => `FAILED: ${failure}`)
  ]
  process.stdout.write(table({ summaries, comparisons, startupMs, notes: allNotes }))

  const file = writeResults(RESULTS_DIR, started, {
    started,
    finished: new Date(),
    options: { rounds, duration, connections, preload, stores: [...stores], service: SERVER_ENTRY, compare: args.compare, smoke, startupRuns, warmupSeconds, shortSeconds },
    environment: {
      node: process.version,
      cpus: cpus().map(({ model }) => model),
      loadAverage: { start: startLoad, end: loadavg() },
      commit: spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || null
    },
    startupMs,
    runs,
    summaries,
    comparisons,
    notes,
    failures
  })
  progress(`figures written to ${file}`)
  if (!args['skip-feed']) await runFeed()
}

/** The change feed's lag and idle streams (bench/feed.ts), in a process of its own, after every other run. */
async function runFeed () {
  const feedStores = [...stores].filter((store) => store !== 'memory')
  if (feedStores.length === 0) return
  checkInterrupted()
  progress('the change feed scenario (bench/feed.ts) …')
  const { child, exited } = spawnTracked(process.execPath,
    [FEED_BENCH, '--stores', feedStores.join(','), '--service', SERVER_ENTRY, ...(smoke ? ['--smoke'] : [])], { stdio: 'inherit' })
  await exited
  checkInterrupted()
  if (child.exitCode !== 0) fail(`the feed scenario exited with code ${child.exitCode}`)
}

let cleaning: Promise<void> | undefined
function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    current?.stop()
    await stopAll()
    for (const name of databases) {
      await dropDatabase(POSTGRES_ADMIN_URL, name)
        .catch((error: Error) => progress(`could not drop database ${name}: ${error.message}`))
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true })
  })()
  return cleaning
}

// The last resort when the process ends some other way: nothing asynchronous runs any more.
process.once('exit', () => {
  killAllNow()
  if (tmp) rmSync(tmp, { recursive: true, force: true })
})
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    interrupted = true
    progress(`\n${signal}: stopping every process the bench started, dropping its databases`)
    cleanup().finally(() => process.exit(code))
  })
}

try {
  await main()
  process.exitCode = failures.length > 0 ? 1 : 0
} catch (error) {
  if (!(error instanceof Interrupted)) console.error(error)
  process.exitCode = 1
} finally {
  await cleanup()
}
