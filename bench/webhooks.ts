// `npm run bench:webhooks`: the cost of webhooks, side by side in one run. For each store, the
// service with webhooks off, with one endpoint (a fast receiver in its own process), and with the
// endpoint but no delivery thread (the outbox write alone) take create runs in turn; medians of CPU
// per create and req/s, their ratios, the deliveries behind
// after each run (counted by the build's own receiver) and the time to deliver the rest; then both idle for 10 s: CPU, and on PostgreSQL the
// transactions the database saw. Then (part rate) each store at a fixed rate of creates: API p99 and
// API-thread CPU per create with webhooks off, and on with a fast receiver, one that answers an
// endless stream of `100 Continue`, and one that never answers. Then (part whole) the service
// unpinned, as an operator runs it: req/s, and CPU per create of every thread until its event is
// delivered, and how far delivery falls behind. `node dist/bench/webhooks.js --help` lists the options.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'
import { createDatabase, dropDatabase, POSTGRES_ADMIN_URL, postgresUnreachable } from './stores.js'
import { cpuMicros, freePort, hasTaskset, machineCpuMicros, spawnTracked, startServer, stop, stopAll, type Server } from './targets.js'

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    parts: { type: 'string', default: 'cpu,rate,whole,drain' },
    rate: { type: 'string', default: '1000' },
    entry: { type: 'string' },
    compare: { type: 'string' },
    help: { type: 'boolean', default: false }
  }
})
if (args.help) {
  process.stdout.write('node dist/bench/webhooks.js [--rounds 3] [--duration 10] [--connections 50] [--stores sqlite,postgres] ' +
    '[--parts cpu,rate,whole,drain] [--rate 1000] [--entry another-build/server.mjs] [--compare another-build/server.mjs]\n' +
    '  --compare: the part cpu runs that build too, in the same rounds (its lines marked "(compare)"): before/after in one run\n')
  process.exit(0)
}
const [rounds, duration, connections] = [Number(args.rounds), Number(args.duration), Number(args.connections)]
const parts = new Set(args.parts.split(','))
// --entry: another build's service (e.g. the main branch's dist/server.mjs), to compare.
const SERVICE = args.entry ?? fileURLToPath(new URL('../server.mjs', import.meta.url))
const RECEIVER = fileURLToPath(new URL('./receiver.js', import.meta.url))
const token = randomBytes(24).toString('base64url')
const tmp = mkdtempSync(join(tmpdir(), 'plant-store-bench-webhooks-'))
const median = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]
const progress = (line: string) => process.stderr.write(`${line}\n`)

/**
 * A receiver (bench/receiver.ts) in `mode`, pinned to core 1 where taskset exists unless `pinned`
 * is false: its URL, and the deliveries it has counted so far.
 */
async function startReceiver (mode = 'fast', pinned = true) {
  const port = await freePort()
  const node = [process.execPath, RECEIVER, String(port), mode]
  const child = spawnTracked(hasTaskset && pinned ? 'taskset' : node[0], hasTaskset && pinned ? ['-c', '1', ...node] : node.slice(1),
    { stdio: ['ignore', 'pipe', 'inherit'] }).child
  const counted = { url: `http://127.0.0.1:${port}/hook`, received: 0 }
  child.stdout!.on('data', (chunk: Buffer) => { counted.received = Number(String(chunk).trim().split('\n').at(-1)) })
  return counted
}

const receiver = await startReceiver()
// The floor script's deliveries reach the same receiver.
let floorDeliveries = 0
const secret = `whsec_${randomBytes(32).toString('base64')}`
const webhookEnv = { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }

let nextId = 1
/** Creates of fresh ids for `seconds`, or `amount` of them. */
const creates = (server: Server, length: { duration: number } | { amount: number }, rate?: { overallRate: number }) => autocannon({
  url: `${server.url}/plants`,
  method: 'POST',
  connections,
  ...length,
  ...rate,
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  requests: [{ setupRequest: (request) => ({ ...request, body: `{"id":${nextId++},"name":"bench"}` }) }]
})

async function createRun (server: Server, seconds: number) {
  const [before, apiBefore] = [cpuMicros(server.pid), cpuMicros(server.pid, server.pid)]
  const result = await creates(server, { duration: seconds })
  const created = result.requests.total - result.non2xx
  return {
    reqPerSec: result.requests.total / result.duration,
    cpuPerCreate: (cpuMicros(server.pid) - before) / created,
    // The thread that serves HTTP alone: delivery runs in a thread of its own.
    apiCpuPerCreate: (cpuMicros(server.pid, server.pid) - apiBefore) / created,
    created,
    other: result.non2xx
  }
}

/**
 * Deliveries still to come, or (below 0) how many more deliveries came than creates were counted:
 * up to `connections` a run are creates answered after the load generator stopped counting; more
 * are deliveries sent twice.
 */
const leftOrTwice = (behind: number, runs: number) => behind >= 0
  ? `${behind} left`
  : `${-behind} more deliveries than creates counted; ${Math.max(0, -behind - runs * connections)} beyond the ${runs * connections} answers in flight when the load generator stopped: sent twice`

/** Waits until `behind` is 0 (`limitMs` at most): the delivery has caught up. */
async function caughtUp (behind: () => number, limitMs: number): Promise<void> {
  const start = performance.now()
  while (behind() > 0 && performance.now() - start < limitMs) await sleep(10)
}

const lines: string[] = []
type CreateRun = Awaited<ReturnType<typeof createRun>>

/** This build, and with --compare another build's entry beside it, in the same rounds. */
const BUILDS = [{ label: '', entry: SERVICE }, ...(args.compare === undefined ? [] : [{ label: ' (compare)', entry: args.compare }])]

interface Build {
  name: string
  plain: Server
  hooks: Server
  /** Webhooks on with WEBHOOK_DELIVERY=off: the outbox written, no delivery thread beside it. */
  outbox: Server
  plainUrl: string
  hooksUrl: string
  runs: { plain: CreateRun[], hooks: CreateRun[], outbox: CreateRun[] }
  /** Creates acknowledged with webhooks on, less the deliveries the build's receiver got. */
  behind: () => number
  pendings: number[]
}

async function measure (store: string, url: () => Promise<string>, xacts?: (url: string) => Promise<number>) {
  const builds: Build[] = []
  for (const { label, entry } of BUILDS) {
    const [plainUrl, hooksUrl] = [await url(), await url()]
    const name = `${store}${label}`
    const env = { DATABASE_URL: plainUrl, API_TOKENS: token, LOG_LEVEL: 'warn', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' }
    // Each build's deliveries reach a receiver of its own: how far behind it is, is counted, not
    // read from /metrics (whose gauge is cached for 10 s).
    const own = await startReceiver()
    const plain = await startServer({ name, script: entry, env, stderrFile: join(tmp, `${name}.log`) })
    const hooks = await startServer({
      name: `${name}+webhook`,
      script: entry,
      env: { ...env, DATABASE_URL: hooksUrl, ...webhookEnv, WEBHOOK_URL: own.url },
      stderrFile: join(tmp, `${name}-webhook.log`)
    })
    // Its events are never delivered: nothing of it counts in `behind`.
    const outbox = await startServer({
      name: `${name}+outbox`,
      script: entry,
      env: { ...env, DATABASE_URL: await url(), ...webhookEnv, WEBHOOK_DELIVERY: 'off' },
      stderrFile: join(tmp, `${name}-outbox.log`)
    })
    await createRun(plain, 2)
    await createRun(outbox, 2)
    const warmUp = await createRun(hooks, 2)
    const runs = { plain: [] as CreateRun[], hooks: [] as CreateRun[], outbox: [] as CreateRun[] }
    const behind = () => warmUp.created + runs.hooks.reduce((sum, run) => sum + run.created, 0) - own.received
    builds.push({ name, plain, hooks, outbox, plainUrl, hooksUrl, runs, behind, pendings: [] as number[] })
  }
  for (let round = 1; round <= rounds; round++) {
    // With --compare, the builds take turns going first.
    for (const { name, plain, hooks, outbox, runs, behind, pendings } of round % 2 === 1 ? builds : builds.toReversed()) {
      runs.plain.push(await createRun(plain, duration))
      runs.outbox.push(await createRun(outbox, duration))
      runs.hooks.push(await createRun(hooks, duration))
      pendings.push(behind())
      // The next run, on the same core, starts once the delivery has caught up (30 s at most).
      await caughtUp(behind, 30_000)
      progress(`[${name} round ${round}/${rounds}] off ${JSON.stringify(runs.plain.at(-1))}; outbox only ${JSON.stringify(runs.outbox.at(-1))}; ` +
        `on ${JSON.stringify(runs.hooks.at(-1))}; behind ${pendings.at(-1)}`)
    }
  }
  const drainStart = performance.now()
  await caughtUp(() => Math.max(...builds.map(({ behind }) => behind())), 60_000)
  const drainMs = performance.now() - drainStart
  // PostgreSQL sessions report their statistics up to 10 s after they fall idle: the runs' are in first.
  await sleep(11_000)
  // Idle: 10 s of nothing, all at once.
  const idle = async (server: Server, databaseUrlOf: string) => {
    const [cpu, xact] = [cpuMicros(server.pid), await xacts?.(databaseUrlOf)]
    await sleep(10_000)
    return { cpuMs: (cpuMicros(server.pid) - cpu) / 1000, xacts: xact === undefined ? undefined : await xacts!(databaseUrlOf) - xact }
  }
  const idles = await Promise.all(builds.map(({ plain, hooks, plainUrl, hooksUrl }) => Promise.all([idle(plain, plainUrl), idle(hooks, hooksUrl)])))
  for (const [index, { name, runs, behind, pendings }] of builds.entries()) {
    const [idlePlain, idleHooks] = idles[index]
    const off = { cpu: median(runs.plain.map(({ cpuPerCreate }) => cpuPerCreate)), rps: median(runs.plain.map(({ reqPerSec }) => reqPerSec)) }
    const on = { cpu: median(runs.hooks.map(({ cpuPerCreate }) => cpuPerCreate)), rps: median(runs.hooks.map(({ reqPerSec }) => reqPerSec)) }
    // Per round, on over off; the median of those ratios.
    const apiRatio = median(runs.hooks.map((run, i) => run.apiCpuPerCreate / runs.plain[i].apiCpuPerCreate))
    const apiOn = median(runs.hooks.map(({ apiCpuPerCreate }) => apiCpuPerCreate))
    const apiOff = median(runs.plain.map(({ apiCpuPerCreate }) => apiCpuPerCreate))
    const outboxOnly = median(runs.outbox.map(({ apiCpuPerCreate }) => apiCpuPerCreate))
    const outboxRatio = median(runs.outbox.map((run, i) => run.apiCpuPerCreate / runs.plain[i].apiCpuPerCreate))
    lines.push(`${name}: API thread CPU per create ${apiOff.toFixed(1)} -> ${apiOn.toFixed(1)} µs (median of per-round ratios ${apiRatio.toFixed(2)}x); ` +
      `of that, the outbox write alone (WEBHOOK_DELIVERY=off, no delivery thread): ${outboxOnly.toFixed(1)} µs (${outboxRatio.toFixed(2)}x)`)
    lines.push(`${name}: CPU per create ${off.cpu.toFixed(1)} -> ${on.cpu.toFixed(1)} µs (${(on.cpu / off.cpu).toFixed(2)}x); ` +
      `req/s ${off.rps.toFixed(0)} -> ${on.rps.toFixed(0)} (${(on.rps / off.rps).toFixed(2)}x; median of per-round ratios ` +
      `${median(runs.hooks.map((run, i) => run.reqPerSec / runs.plain[i].reqPerSec)).toFixed(2)}x); deliveries behind after each run ${pendings.join(', ')}; ` +
      `all delivered ${drainMs.toFixed(0)} ms after the last (${leftOrTwice(behind(), runs.hooks.length + 1)})`,
    `${name}: idle 10 s: CPU ${idlePlain.cpuMs.toFixed(0)} ms off, ${idleHooks.cpuMs.toFixed(0)} ms on` +
      (idleHooks.xacts === undefined ? '' : `; database transactions ${idlePlain.xacts} off, ${idleHooks.xacts} on (statistics flushed at most once a second)`))
    progress(lines.slice(-3).join('\n'))
  }
}

/** The receivers of the rate runs beside the fast one: each server its own. */
const HOSTILE_RECEIVERS = ['continue', 'silent'] as const

const percentile = (values: number[], p: number) => values.toSorted((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p / 100))]

/** Creates at a fixed rate for `seconds`: latencies from each answer (autocannon's histogram counts whole ms), API-thread CPU. */
async function rateRun (server: Server, seconds: number) {
  const apiBefore = cpuMicros(server.pid, server.pid)
  const latencies: number[] = []
  const run = creates(server, { duration: seconds }, { overallRate: Number(args.rate) })
  run.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms))
  const result = await run
  const created = result.requests.total - result.non2xx
  return {
    p50: percentile(latencies, 50), p99: percentile(latencies, 99), apiCpuPerCreate: (cpuMicros(server.pid, server.pid) - apiBefore) / created, created, other: result.non2xx
  }
}

/**
 * At a fixed rate: webhooks off, and on with each receiver (fast, endless 100 Continue, silent).
 * Only the server measured runs: the others are stopped (SIGSTOP) meanwhile, so that their
 * retries and timeouts take nothing from it on the shared core.
 */
async function rateMeasure (store: string, url: () => Promise<string>) {
  const env = { API_TOKENS: token, LOG_LEVEL: 'warn', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' }
  const receivers: Record<string, string> = { fast: webhookEnv.WEBHOOK_URL }
  for (const mode of HOSTILE_RECEIVERS) receivers[mode] = (await startReceiver(mode)).url
  const servers: Array<{ name: string, server: Server }> = [{
    name: 'off', server: await startServer({ name: `${store} rate off`, script: SERVICE, env: { ...env, DATABASE_URL: await url() }, stderrFile: join(tmp, `${store}-rate-off.log`) })
  }]
  for (const [mode, receiverUrl] of Object.entries(receivers)) {
    servers.push({
      name: mode,
      server: await startServer({
        name: `${store} rate ${mode}`, script: SERVICE, env: { ...env, DATABASE_URL: await url(), ...webhookEnv, WEBHOOK_URL: receiverUrl }, stderrFile: join(tmp, `${store}-rate-${mode}.log`)
      })
    })
  }
  const only = (running: Server) => { for (const { server } of servers) process.kill(server.pid, server === running ? 'SIGCONT' : 'SIGSTOP') }
  const runs = new Map(servers.map(({ name }) => [name, [] as Array<Awaited<ReturnType<typeof rateRun>>>]))
  try {
    for (const { server } of servers) {
      only(server)
      await rateRun(server, 2)
    }
    for (let round = 1; round <= rounds; round++) {
      for (const { name, server } of servers) {
        only(server)
        runs.get(name)!.push(await rateRun(server, duration))
      }
      progress(`[${store} rate round ${round}/${rounds}] ${servers.map(({ name }) => `${name} ${JSON.stringify(runs.get(name)!.at(-1))}`).join('; ')}`)
    }
  } finally {
    for (const { server } of servers) process.kill(server.pid, 'SIGCONT')
  }
  const off = runs.get('off')!
  for (const { name } of servers) {
    const on = runs.get(name)!
    // Per round, over off; the median of those ratios.
    const ratio = (pick: (run: typeof on[number]) => number) => median(on.map((run, index) => pick(run) / pick(off[index]))).toFixed(2)
    lines.push(`${store} at ${args.rate}/s, ${name === 'off' ? 'webhooks off' : `${name} receiver`}: p50 ${median(on.map(({ p50 }) => p50)).toFixed(2)} ms, ` +
      `p99 ${median(on.map(({ p99 }) => p99)).toFixed(2)} ms (${ratio(({ p99 }) => p99)}x), ` +
      `API thread ${median(on.map(({ apiCpuPerCreate }) => apiCpuPerCreate)).toFixed(1)} µs per create (${ratio(({ apiCpuPerCreate }) => apiCpuPerCreate)}x), ` +
      `non-2xx ${on.reduce((sum, { other }) => sum + other, 0)}`)
  }
  progress(lines.slice(-servers.length).join('\n'))
  await Promise.all(servers.map(({ server }) => stop(server)))
  // Delivered to the fast receiver, as those of the CPU runs.
  return runs.get('fast')!.reduce((sum, { created }) => sum + created, 0)
}

/** The CPU of a create and of delivering its event, in µs, and how far delivery fell behind. */
interface WholeRun { reqPerSec: number, cpuPerCreate: number, apiCpuPerCreate: number, machinePerCreate: number, created: number, maxBacklog: number, endBacklog: number, drainMs: number }

/**
 * Creates for `seconds` on a server left where the kernel puts it; with webhooks on (`delivered`
 * counts what its receiver got), its backlog (creates acknowledged less deliveries received) each
 * second, and its CPU (every thread) counted until the run's events are delivered (60 s at most);
 * the CPU of the thread that serves HTTP, during the load alone.
 */
async function wholeRun (server: Server, seconds: number, delivered?: () => number): Promise<WholeRun> {
  const [cpu, apiCpu, machine, before] = [cpuMicros(server.pid), cpuMicros(server.pid, server.pid), machineCpuMicros(), delivered?.() ?? 0]
  let acknowledged = 0
  // Webhooks off: nothing to deliver.
  const backlog = () => delivered === undefined ? 0 : acknowledged - (delivered() - before)
  let maxBacklog = 0
  const sampler = setInterval(() => { maxBacklog = Math.max(maxBacklog, backlog()) }, 1000)
  const run = creates(server, { duration: seconds })
  run.on('response', (_client: unknown, status: number) => { if (status >= 200 && status < 300) acknowledged++ })
  const result = await run
  const apiCpuPerCreate = (cpuMicros(server.pid, server.pid) - apiCpu) / acknowledged
  clearInterval(sampler)
  const endBacklog = backlog()
  const drainStart = performance.now()
  await caughtUp(backlog, 60_000)
  return {
    reqPerSec: result.requests.total / result.duration,
    cpuPerCreate: (cpuMicros(server.pid) - cpu) / acknowledged,
    apiCpuPerCreate,
    machinePerCreate: (machineCpuMicros() - machine) / acknowledged,
    created: acknowledged,
    maxBacklog: Math.max(maxBacklog, endBacklog),
    endBacklog,
    drainMs: performance.now() - drainStart
  }
}

/**
 * The whole service as an operator runs it here (part whole): unpinned, beside its receiver (a
 * fast one, unpinned too) and the load generator, on the same two cores. Per round, webhooks off
 * then on: req/s, and the CPU of every thread per create, with webhooks on counted until each
 * create's event is delivered; how far delivery fell behind during the runs.
 */
async function wholeMeasure (store: string, url: () => Promise<string>, floor: number) {
  const wholeReceiver = await startReceiver('fast', false)
  const env = { API_TOKENS: token, LOG_LEVEL: 'warn', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' }
  const off = await startServer({ name: `${store} whole off`, script: SERVICE, env: { ...env, DATABASE_URL: await url() }, stderrFile: join(tmp, `${store}-whole-off.log`), pinned: false })
  const on = await startServer({
    name: `${store} whole on`,
    script: SERVICE,
    env: { ...env, DATABASE_URL: await url(), ...webhookEnv, WEBHOOK_URL: wholeReceiver.url },
    stderrFile: join(tmp, `${store}-whole-on.log`),
    pinned: false
  })
  const delivered = () => wholeReceiver.received
  await wholeRun(off, 2)
  await wholeRun(on, 2, delivered)
  const runs = { off: [] as WholeRun[], on: [] as WholeRun[] }
  for (let round = 1; round <= rounds; round++) {
    runs.off.push(await wholeRun(off, duration))
    runs.on.push(await wholeRun(on, duration, delivered))
    progress(`[${store} whole round ${round}/${rounds}] off ${JSON.stringify(runs.off.at(-1))}; on ${JSON.stringify(runs.on.at(-1))}`)
  }
  await Promise.all([stop(off), stop(on)])
  const ratio = (pick: (run: WholeRun) => number) => median(runs.on.map((run, index) => pick(run) / pick(runs.off[index])))
  const [cpuOff, cpuOn] = [median(runs.off.map(({ cpuPerCreate }) => cpuPerCreate)), median(runs.on.map(({ cpuPerCreate }) => cpuPerCreate))]
  const [machineOff, machineOn] = [median(runs.off.map(({ machinePerCreate }) => machinePerCreate)), median(runs.on.map(({ machinePerCreate }) => machinePerCreate))]
  const [apiOff, apiOn] = [median(runs.off.map(({ apiCpuPerCreate }) => apiCpuPerCreate)), median(runs.on.map(({ apiCpuPerCreate }) => apiCpuPerCreate))]
  lines.push(`${store} whole service, unpinned (${rounds} x ${duration} s): req/s ${median(runs.off.map(({ reqPerSec }) => reqPerSec)).toFixed(0)} -> ` +
    `${median(runs.on.map(({ reqPerSec }) => reqPerSec)).toFixed(0)} (median of per-round ratios ${ratio(({ reqPerSec }) => reqPerSec).toFixed(2)}x); ` +
    `CPU per create, every thread, with webhooks on until its event is delivered: ${cpuOff.toFixed(1)} -> ${cpuOn.toFixed(1)} µs ` +
    `(+${(cpuOn - cpuOff).toFixed(1)} µs${Number.isNaN(floor) ? '' : `, ${((cpuOn - cpuOff) / floor).toFixed(2)}x the bare undici floor`}); ` +
    `the thread that serves HTTP alone: ${apiOff.toFixed(1)} -> ${apiOn.toFixed(1)} µs (median of per-round ratios ${ratio(({ apiCpuPerCreate }) => apiCpuPerCreate).toFixed(2)}x); ` +
    `every process of the machine (service, receiver, load generator, database): ${machineOff.toFixed(1)} -> ${machineOn.toFixed(1)} µs per create, ` +
    `so the same cores fit at most ${(machineOff / machineOn).toFixed(2)}x the rate; ` +
    `deliveries behind the creates: at most ${runs.on.map(({ maxBacklog }) => maxBacklog).join(', ')}, at the end ${runs.on.map(({ endBacklog }) => endBacklog).join(', ')}, ` +
    `caught up in ${runs.on.map(({ drainMs }) => (drainMs / 1000).toFixed(1)).join(', ')} s`)
  progress(lines.at(-1)!)
}

const BACKLOG = 20_000

/** Waits until the receiver has counted nothing new for 100 ms (it prints its count every 20 ms). */
async function receiverQuiet (): Promise<void> {
  for (let last = -1; last !== receiver.received; await sleep(100)) last = receiver.received
}

/**
 * Delivery alone: an API-only instance (WEBHOOK_DELIVERY=off) writes BACKLOG events, then a
 * delivery-only instance (API=off) drains them to the receiver; its CPU per delivery, counted from
 * its first delivery (its start, its thread's modules and store connection, is not the drain's),
 * beside a run of the bare undici script (bench/undici-baseline.ts) just before it, `rounds`
 * times: medians, and the median of the per-round ratios.
 */
async function drainCost (store: string, url: string) {
  const env = { DATABASE_URL: url, API_TOKENS: token, LOG_LEVEL: 'warn', PRESSURE_MAX_EVENT_LOOP_DELAY: '0', ...webhookEnv }
  const api = await startServer({ name: `${store} api-only`, script: SERVICE, env: { ...env, WEBHOOK_DELIVERY: 'off' }, stderrFile: join(tmp, `${store}-api.log`) })
  const runs: Array<{ perDelivery: number, floor: number, rate: number }> = []
  for (let round = 1; round <= rounds; round++) {
    const floor = await floorRun('undici')
    await creates(api, { amount: BACKLOG })
    await receiverQuiet()
    const before = receiver.received
    const delivery = await startServer({ name: `${store} delivery-only`, script: SERVICE, env: { ...env, API: 'off' }, stderrFile: join(tmp, `${store}-delivery.log`) })
    const deadline = performance.now() + 300_000
    const delivered = () => receiver.received - before
    while (delivered() === 0 && performance.now() < deadline) await sleep(1)
    const [cpu, first, start] = [cpuMicros(delivery.pid), receiver.received, performance.now()]
    while (delivered() < BACKLOG && performance.now() < deadline) await sleep(5)
    const perDelivery = (cpuMicros(delivery.pid) - cpu) / (receiver.received - first)
    runs.push({ perDelivery, floor, rate: (receiver.received - first) / ((performance.now() - start) / 1000) })
    await stop(delivery)
    progress(`[${store} drain round ${round}/${rounds}] ${delivered()} delivered; ${perDelivery.toFixed(1)} µs CPU per delivery, undici floor ${floor.toFixed(1)} µs`)
  }
  await stop(api)
  const perDelivery = median(runs.map((run) => run.perDelivery))
  lines.push(`${store}: delivery-only process draining ${BACKLOG} events: ${perDelivery.toFixed(1)} µs CPU per delivery, ` +
    `${median(runs.map(({ rate }) => rate)).toFixed(0)} deliveries/s; the bare undici script beside it ${median(runs.map(({ floor }) => floor)).toFixed(1)} µs: ` +
    `${median(runs.map((run) => run.perDelivery / run.floor)).toFixed(2)}x (median of ${rounds} per-round ratios)`)
  progress(lines.at(-1)!)
  return perDelivery
}

/** One run of the bare script (bench/undici-baseline.ts) with `client`: its CPU per delivery of BACKLOG. */
async function floorRun (client: 'undici' | 'http'): Promise<number> {
  const script = fileURLToPath(new URL('./undici-baseline.js', import.meta.url))
  // On the service's core, as the service is.
  const node = [process.execPath, script, webhookEnv.WEBHOOK_URL, secret, String(BACKLOG), '64', client]
  const child = spawnTracked(hasTaskset ? 'taskset' : node[0], hasTaskset ? ['-c', '0', ...node] : node.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.child.stdout!.on('data', (chunk: Buffer) => { out += String(chunk) })
  await new Promise((resolve) => child.child.once('exit', resolve))
  // Not the service's: left out of the receiver's count below.
  floorDeliveries += BACKLOG
  return Number(out.trim())
}

/**
 * The bare undici script's CPU per delivery, median of three runs of BACKLOG; beside each, the
 * same script with node:http and a keep-alive Agent (the client the service used before undici).
 */
async function undiciFloor (): Promise<number> {
  const runs: number[] = []
  const http: number[] = []
  for (let run = 0; run < 3; run++) {
    runs.push(await floorRun('undici'))
    http.push(await floorRun('http'))
  }
  lines.push(`bare undici script (sign + Pool.request, 64 in flight): ${median(runs).toFixed(1)} µs CPU per delivery (runs ${runs.map((run) => run.toFixed(1)).join(', ')})`,
    `bare node:http script (sign + http.request, keep-alive Agent, 64 in flight): ${median(http).toFixed(1)} µs CPU per delivery ` +
    `(${median(http.map((each, index) => each / runs[index])).toFixed(2)}x undici, median of per-run ratios)`)
  progress(lines.slice(-2).join('\n'))
  return median(runs)
}

try {
  const stores = args.stores.split(',')
  let sent = 0
  const floor = parts.has('drain') ? await undiciFloor() : NaN
  if (stores.includes('sqlite')) {
    let n = 0
    const sqliteUrl = async () => `sqlite:${join(tmp, `plants-${n++}.db`)}`
    if (parts.has('cpu')) await measure('sqlite', sqliteUrl)
    if (parts.has('rate')) sent += await rateMeasure('sqlite', sqliteUrl)
    if (parts.has('whole')) await wholeMeasure('sqlite', sqliteUrl, floor)
    if (parts.has('drain')) {
      const drain = await drainCost('sqlite', `sqlite:${join(tmp, 'drain.db')}`)
      lines.push(`sqlite: delivery ${(drain / floor).toFixed(2)}x the bare undici floor`)
      sent += rounds * BACKLOG
    }
  }
  if (stores.includes('postgres')) {
    const unreachable = await postgresUnreachable(POSTGRES_ADMIN_URL)
    if (unreachable !== undefined) {
      lines.push(`postgres: skipped (${unreachable})`)
    } else {
      const names: string[] = []
      const xacts = async (url: string) => {
        const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
        await client.connect()
        try {
          const { rows: [row] } = await client.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [new URL(url).pathname.slice(1)])
          return Number(row.n)
        } finally {
          await client.end()
        }
      }
      const postgresUrl = async () => {
        const name = `plant_store_bench_webhooks_${randomBytes(4).toString('hex')}`
        names.push(name)
        return createDatabase(POSTGRES_ADMIN_URL, name)
      }
      try {
        if (parts.has('cpu')) await measure('postgres', postgresUrl, xacts)
        if (parts.has('rate')) sent += await rateMeasure('postgres', postgresUrl)
        if (parts.has('whole')) await wholeMeasure('postgres', postgresUrl, floor)
        if (parts.has('drain')) {
          const drain = await drainCost('postgres', await postgresUrl())
          lines.push(`postgres: delivery ${(drain / floor).toFixed(2)}x the bare undici floor`)
          sent += rounds * BACKLOG
        }
      } finally {
        await stopAll()
        for (const name of names) await dropDatabase(POSTGRES_ADMIN_URL, name)
      }
    }
  }
  lines.push(`receiver: ${receiver.received - floorDeliveries} deliveries for ${sent} creates acknowledged with webhooks on (the warm-up runs' creates come on top)`)
  process.stdout.write(`\n${lines.join('\n')}\n`)
} finally {
  await stopAll()
  rmSync(tmp, { recursive: true, force: true })
}
