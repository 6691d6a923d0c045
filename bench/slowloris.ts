// Slowloris against the built service with its default limits (MAX_CONNECTIONS derived from the
// open-files limit), sockets trickling header lines: `node dist/bench/slowloris.js --help`. Too long for
// the test suite (test/system/slow-headers-flood.test.ts runs it scaled down); re-run it by hand.
import { randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { connectionLimit, openFilesLimit } from '../service/config/index.js'
import { socketFlood } from './socket-flood.js'
import { killAllNow, spawnTracked, startServer, stop, stopAll } from './targets.js'

const HELP = `Usage: node dist/bench/slowloris.js [options]
  --sockets N    slowloris sockets, each reconnecting when closed (default 10400)
  --drip MS      one header line per socket every MS (default 2000)
  --duration S   seconds of measuring once every socket has connected (default 10)
The service runs with every default limit; the attacker's open-files limit is raised to fit.`

const { values } = parseArgs({
  options: {
    sockets: { type: 'string', default: '10400' },
    drip: { type: 'string', default: '2000' },
    duration: { type: 'string', default: '10' },
    help: { type: 'boolean', default: false }
  }
})
if (values.help) {
  console.log(HELP)
  process.exit(0)
}
const SOCKETS = Number(values.sockets)
const DRIP = Number(values.drip)
const DURATION = Number(values.duration) * 1000
const TOKEN = randomBytes(24).toString('base64url')
const TIMEOUT = 10_000
const CONCURRENCY = 4
const RECONNECT_PAUSE = 50

/** One GET with the token; resolves with the failure (error code or status), or undefined for `status`. */
function once (url: string, agent: Agent | false, status: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const headers = { authorization: `Bearer ${TOKEN}`, ...(agent === false && { connection: 'close' }) }
    const sent = request(url, { agent, headers, timeout: TIMEOUT }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode === status ? undefined : `status ${response.statusCode}`))
      response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    })
    sent.on('timeout', () => sent.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })))
    sent.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    sent.end()
  })
}

/** `CONCURRENCY` loops of `ask` for `duration` ms: answered, asked, failures by kind. */
async function measure (duration: number, ask: () => Promise<string | undefined>) {
  const failures: Record<string, number> = {}
  let asked = 0
  const end = performance.now() + duration
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      asked++
      const failure = await ask()
      if (failure !== undefined) failures[failure] = (failures[failure] ?? 0) + 1
    }
  }))
  const failed = Object.values(failures).reduce((sum, count) => sum + count, 0)
  return `${asked - failed} of ${asked} answered${failed > 0 ? ` (failures ${JSON.stringify(failures)})` : ''}`
}

process.on('exit', killAllNow)
try {
  const limit = connectionLimit({ MAX_CONNECTIONS: 0 }, openFilesLimit())
  const server = await startServer({
    name: 'service',
    script: fileURLToPath(new URL('../server.mjs', import.meta.url)),
    env: { API_TOKENS: TOKEN, DATABASE_URL: 'memory:' },
    stderrFile: join(tmpdir(), 'plant-store-slowloris.stderr'),
    readyPath: '/healthz'
  })
  console.log(`service at ${server.url}, MAX_CONNECTIONS ${limit} (default, open-files limit ${openFilesLimit()}); ${SOCKETS} slowloris sockets`)
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  // The keep-alive client's connections are open and answered before the flood, as a running client's are.
  await Promise.all(Array.from({ length: CONCURRENCY }, () => once(`${server.url}/plants/1`, agent, 404)))

  const code = `(${socketFlood.toString()})(${Number(new URL(server.url).port)}, ${SOCKETS}, ${RECONNECT_PAUSE}, ${JSON.stringify({ drip: DRIP })})`
  const attacker = spawnTracked('/bin/sh', ['-c', `ulimit -n ${SOCKETS + 256} && exec "$@"`, 'sh', process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  let connected = 0
  const started = performance.now()
  // Measuring begins once every socket has connected (or after two minutes).
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 120_000)
    attacker.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      connected = Math.max(connected, ...chunk.split('\n').filter(Boolean).map(Number))
      if (connected < SOCKETS) return
      clearTimeout(timer)
      resolve()
    })
  })
  console.log(`flood: ${connected} connections in ${Math.round(performance.now() - started)} ms`)

  const [fresh, kept] = await Promise.all([
    measure(DURATION, () => once(`${server.url}/plants/1`, false, 404)),
    measure(DURATION, () => once(`${server.url}/plants/1`, agent, 404))
  ])
  console.log(`during ${DURATION} ms of flood (${connected} connections made by then):`)
  console.log(`  fresh requests with a token: ${fresh}`)
  console.log(`  keep-alive client with a token: ${kept}`)
  agent.destroy()
  await stop(attacker, 0)
  await stop(server)
} finally {
  await stopAll()
}
