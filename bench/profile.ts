// Where a request's CPU goes: runs one target under --cpu-prof with autocannon on one path, then
// splits the samples taken during the load by package or file of ours, in µs per request.
// `node dist/bench/profile.js --help` lists the options.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { PATHS, type Path } from './report.js'
import { headersFor, requestFor, seedUpdatePool } from './requests.js'
import { createDatabase, dropDatabase, POSTGRES_ADMIN_URL } from './stores.js'
import { BASELINE_ENTRIES, cpuMicros, freePort, hasTaskset, spawnTracked, startServer, stop, stopAll } from './targets.js'

const ENTRIES: Record<string, string> = {
  // The unbundled entry, so that the profile names each package and file.
  service: fileURLToPath(new URL('../service/entry-points/server.js', import.meta.url)),
  ...BASELINE_ENTRIES
}
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const HELP = `Usage: node dist/bench/profile.js [options]
  --target T       service, fastify or node:http (default service)
  --store URL      the service's DATABASE_URL (default memory:); sqlite: alone is a new file, postgres
                   alone a new database on BENCH_POSTGRES_URL (default ${POSTGRES_ADMIN_URL}), dropped after
  --path P         ${PATHS.join(', ')} (default create)
  --seconds S      seconds of load, after 2 s of warm-up (default 10)
  --connections N  concurrent connections (default 50)
  --top N          functions listed by self time (default 25)
  --webhooks       with one webhook endpoint: the fast receiver (bench/receiver.ts) in a process of its own
  --entry FILE     the service's entry to run instead (e.g. another commit's build, to compare)
  --keep DIR       also keep the .cpuprofile in DIR (open it in Chrome DevTools)`

const { values: args } = parseArgs({
  options: {
    target: { type: 'string', default: 'service' },
    store: { type: 'string', default: 'memory:' },
    path: { type: 'string', default: 'create' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '25' },
    entry: { type: 'string' },
    keep: { type: 'string' },
    webhooks: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false }
  }
})
const path = args.path as Path
if (args.help || !(args.target in ENTRIES) || !PATHS.includes(path)) {
  console.log(HELP)
  process.exit(args.help ? 0 : 2)
}

interface ProfileNode { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }
interface Profile { nodes: ProfileNode[], startTime: number, samples: number[], timeDeltas: number[] }

/** What a profile node's time counts towards: a package, a file of ours, a part of Node, or V8. */
function category ({ functionName, url }: ProfileNode['callFrame']): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return url
  const file = url.replace(/^file:\/\//, '')
  const packages = file.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)
  if (packages) return packages.at(-1)!.replace('node_modules/', '')
  return relative(ROOT, file).replace(/^dist\//, '')
}

/** Self time in µs of each node, counting only the samples taken between `from` and `to`. */
function selfTimes (profile: Profile, from: number, to: number): Map<number, number> {
  const times = new Map<number, number>()
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i]
    const delta = profile.timeDeltas[i + 1] ?? 0
    if (at >= from && at < to) times.set(id, (times.get(id) ?? 0) + delta)
  })
  return times
}

function rows (totals: Map<string, number>, requests: number, limit: number): string[] {
  const all = [...totals.values()].reduce((sum, value) => sum + value, 0)
  return [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, limit)
    .map(([name, us]) => `${(us / requests).toFixed(2).padStart(8)} µs  ${(100 * us / all).toFixed(1).padStart(5)} %  ${name}`)
}

const seconds = Number(args.seconds)
const connections = Number(args.connections)
const token = randomBytes(24).toString('base64url')
const dir = mkdtempSync(join(tmpdir(), 'plant-store-profile-'))
const keep = args.keep
// --store postgres: a database of its own, never the server's others.
const database = args.store === 'postgres' ? `plant_store_profile_${process.pid}` : undefined

/** The service's DATABASE_URL: a new SQLite file or PostgreSQL database for the shorthands. */
async function storeUrl (): Promise<string> {
  if (args.store === 'sqlite:') return `sqlite:${join(dir, 'plants.db')}`
  if (database === undefined) return args.store
  return createDatabase(POSTGRES_ADMIN_URL, database)
}
/** With --webhooks: a fast receiver on core 1 and the service's settings for it. */
async function webhookEnv (): Promise<Record<string, string>> {
  if (!args.webhooks) return {}
  const port = await freePort()
  const node = [process.execPath, fileURLToPath(new URL('./receiver.js', import.meta.url)), String(port)]
  spawnTracked(hasTaskset ? 'taskset' : node[0], hasTaskset ? ['-c', '1', ...node] : node.slice(1), { stdio: 'ignore' })
  return { WEBHOOK_URL: `http://127.0.0.1:${port}/hook`, WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }
}

try {
  const server = await startServer({
    name: args.target,
    script: args.entry ?? ENTRIES[args.target],
    env: {
      DATABASE_URL: await storeUrl(), API_TOKENS: token, TOKEN: token, LOG_LEVEL: 'info', ...await webhookEnv()
    },
    stderrFile: join(dir, 'stderr.log'),
    nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${keep ?? dir}`]
  })
  // The server is on core 0, autocannon on core 1, as in the benchmark.
  if (hasTaskset) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)])
  const unseeded = path === 'update' ? await seedUpdatePool(server.url, token) : undefined
  if (unseeded !== undefined) throw new Error(unseeded)
  const load = (duration: number) => autocannon({
    url: `${server.url}/plants`, method: 'POST', connections, duration, headers: headersFor(path, token), requests: [requestFor(path)]
  })
  await load(2)
  const cpuBefore = cpuMicros(server.pid)
  const from = Number(process.hrtime.bigint() / 1000n)
  const result = await load(seconds)
  const to = Number(process.hrtime.bigint() / 1000n)
  const cpu = cpuMicros(server.pid) - cpuBefore
  const requests = result.requests.total
  await stop(server)

  const profileDir = keep ?? dir
  // CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile: the main thread's is thread 0 (a delivery thread writes its own).
  const file = readdirSync(profileDir).filter((name) => /\.0\.\d+\.cpuprofile$/.test(name)).sort().at(-1)!
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const byCategory = new Map<string, number>()
  const byFunction = new Map<string, number>()
  for (const [id, us] of selfTimes(profile, from, to)) {
    const { callFrame } = nodes.get(id)!
    if (callFrame.functionName === '(idle)') continue
    const name = category(callFrame)
    byCategory.set(name, (byCategory.get(name) ?? 0) + us)
    const fn = `${callFrame.functionName || '(anonymous)'} ${name}:${callFrame.lineNumber + 1}`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
  }
  const sampled = [...byCategory.values()].reduce((sum, value) => sum + value, 0)
  const statuses = Object.entries(result.statusCodeStats).map(([code, { count }]) => `${code}: ${count}`).join(', ')
  console.log([
    `${args.target}${args.target === 'service' ? ` (${args.store})` : ''} ${path}: ${requests} requests in ${seconds} s ` +
      `(${(requests / seconds).toFixed(0)} req/s; ${statuses}), load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    `CPU (from /proc, profiler included): ${(cpu / requests).toFixed(1)} µs/req; ` +
      `sampled on the main thread, not idle: ${(sampled / requests).toFixed(1)} µs/req`,
    '', 'Self time by package or file:', ...rows(byCategory, requests, 40),
    '', 'Self time by function:', ...rows(byFunction, requests, Number(args.top))
  ].join('\n'))
  if (keep) console.log(`\nprofile: ${join(keep, file)}`)
} finally {
  await stopAll()
  if (database !== undefined) await dropDatabase(POSTGRES_ADMIN_URL, database)
  rmSync(dir, { recursive: true, force: true })
}
