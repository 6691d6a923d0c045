// `npm run test:runtime` (CI runs it): the production recipe end to end, as an operator follows
// it. For each store, the runtime folder (scripts/runtime.mjs) is made for that store alone and
// installed with `npm ci --omit=dev --engine-strict` (no package that refuses this Node); its
// size and package count are measured and checked (no build, test, lint, bench or document
// tooling; under 60 MB); then the service is started from
// it, creates and reads a plant with an id past 2^53, and is stopped with SIGTERM (exit 0).
// Those folders hold nothing of OpenTelemetry; one made with --tracing (for the memory store: no
// driver to compile) sends the traces of that create, its store operation and its webhook attempt
// to a collector.
// PostgreSQL is skipped with a notice when unreachable, except under CI=true. Last, `npm start`
// on this unchanged checkout is timed to its first /healthz answer (it must not rebuild).
import { execFileSync, spawn } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import protobuf from 'protobufjs'
import { isBuildCurrent, ROOT } from './build-stamp.mjs'

const MAX_MEGABYTES = 60
const TRACING = /^(@opentelemetry\/.*|@fastify\/otel)$/
const TOOLING = /^(typescript|tap|@tapjs\/.*|eslint|neostandard|esbuild|autocannon|playwright-core|@stoplight\/.*|@redocly\/.*|publint|@arethetypeswrong\/.*|fast-check|openapi-typescript)$/
const TOKEN = 'runtime-test-token-0123456789'
const ID = '9223372036854775807'
const work = mkdtempSync(join(tmpdir(), 'plant-store-runtime-'))
// The SQLite file's folder: the service makes none but the default's ./data.
mkdirSync(join(work, 'data'))
const pgServer = process.env.PLANT_STORE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

function run (command, args, cwd) {
  process.stdout.write(`\n$ (${cwd}) ${command} ${args.join(' ')}\n`)
  return execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
}

/** Makes and installs the runtime folder for one store ('': memory only), with tracing or without: its path, packages and megabytes. */
function install (store, tracing = false) {
  const dir = join(work, `${store || 'memory'}${tracing ? '-tracing' : ''}`)
  process.stdout.write(run(process.execPath, [join(ROOT, 'scripts/runtime.mjs'), '--out', dir, '--stores', store, ...(tracing ? ['--tracing'] : [])], ROOT))
  run('npm', ['ci', '--omit=dev', '--strict-allow-scripts', '--engine-strict', '--no-audit', '--no-fund', '--loglevel=error'], dir)
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules/.package-lock.json'), 'utf8'))
  const names = Object.keys(lock.packages).map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
  const tooling = names.filter((name) => TOOLING.test(name))
  if (tooling.length > 0) throw new Error(`the ${store} runtime installs tooling: ${tooling.join(', ')}`)
  const traced = names.filter((name) => TRACING.test(name))
  if (tracing ? !traced.includes('@fastify/otel') : traced.length > 0) throw new Error(`the ${store} runtime (tracing: ${tracing}) installs ${traced.join(', ') || 'no tracing'}`)
  const megabytes = Number(run('du', ['-sb', '.'], dir).split('\t')[0]) / 2 ** 20
  if (megabytes > MAX_MEGABYTES) throw new Error(`the ${store} runtime takes ${megabytes.toFixed(1)} MB, over ${MAX_MEGABYTES} MB`)
  return { dir, packages: names.length, megabytes }
}

/** The address a service started as `child` logs when it listens. */
function listening (child) {
  let log = ''
  child.stdout.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      log += chunk
      const found = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log)
      if (found) resolve(found[1])
    })
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before listening:\n${log}`)))
  })
}

/** A webhook receiver on 127.0.0.1: resolves the first delivery's headers and body. */
async function webhookReceiver () {
  let deliver
  const delivered = new Promise((resolve) => { deliver = resolve })
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => { body += chunk })
    request.on('end', () => {
      response.end()
      deliver({ headers: request.headers, body })
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${server.address().port}/hook`, delivered, close: () => server.close() }
}

/**
 * Starts `node server.mjs` in `dir` with a webhook endpoint, creates and reads a plant, waits for
 * its signed plant.created delivery, stops it with SIGTERM.
 */
async function exercise (dir, databaseUrl, extraEnv = {}) {
  const receiver = await webhookReceiver()
  const secret = `whsec_${randomBytes(32).toString('base64')}`
  const child = spawn(process.execPath, ['server.mjs'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      DATABASE_URL: databaseUrl,
      API_TOKENS: TOKEN,
      NODE_ENV: 'production',
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
      ...extraEnv
    },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const address = await listening(child)
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
  const created = await fetch(`${address}/plants`, { method: 'POST', headers, body: `{"id":${ID},"name":"Monstera"}` })
  const read = await fetch(`${address}/plants?limit=1`, { headers })
  const [createdText, readText] = [await created.text(), await read.text()]
  if (created.status !== 200 || createdText !== '{"name":"Monstera"}') throw new Error(`create: ${created.status} ${createdText}`)
  if (read.status !== 200 || readText !== `[{"id":${ID},"name":"Monstera"}]`) throw new Error(`list: ${read.status} ${readText}`)
  const { headers: hook, body } = await Promise.race([receiver.delivered, sleep(10_000).then(() => ({ headers: {}, body: 'none within 10 s' }))])
  receiver.close()
  const signed = `${hook['webhook-id']}.${hook['webhook-timestamp']}.${body}`
  const signature = `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(signed).digest('base64')}`
  if (!new RegExp(`^\\{"type":"plant\\.created","timestamp":"[^"]+","id":${ID},"name":"Monstera"\\}$`).test(body) || hook['webhook-signature'] !== signature) {
    throw new Error(`webhook: ${JSON.stringify(hook)} ${body}`)
  }
  child.kill('SIGTERM')
  const [code, signal] = await once(child, 'exit')
  if (code !== 0) throw new Error(`SIGTERM: the service exited with ${code ?? signal}`)
  return hook
}

/**
 * The span names of an OTLP trace export request (opentelemetry-proto collector/trace/v1), decoded
 * by protobufjs: the runtime folder sends http/protobuf, the OTLP default operators get.
 */
const ExportRequest = protobuf.Root.fromJSON({
  nested: {
    Span: { fields: { name: { type: 'string', id: 5 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    ResourceSpans: { fields: { scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } }
  }
}).lookupType('ExportTraceServiceRequest')

/** An OTLP/HTTP collector on 127.0.0.1: the names of the spans POSTed to it (protobuf). */
async function collector () {
  const names = []
  const server = createServer((request, response) => {
    const chunks = []
    request.on('data', (chunk) => chunks.push(chunk))
    request.on('end', () => {
      const { resourceSpans } = ExportRequest.toObject(ExportRequest.decode(Buffer.concat(chunks)), { arrays: true })
      for (const { scopeSpans } of resourceSpans) for (const { spans } of scopeSpans) names.push(...spans.map(({ name }) => name))
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { endpoint: `http://127.0.0.1:${server.address().port}`, names, close: () => server.close() }
}

/** A new database on the PostgreSQL server, or undefined (with the reason) when unreachable. */
async function postgresDatabase () {
  const name = `plant_store_runtime_${process.pid}`
  const client = new pg.Client({ connectionString: pgServer, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await client.query(`CREATE DATABASE ${name}`)
  } catch (error) {
    return { reason: `PostgreSQL at ${new URL(pgServer).host} is unreachable (${error.message})` }
  } finally {
    await client.end().catch(() => {})
  }
  const url = new URL(pgServer)
  url.pathname = `/${name}`
  const drop = async () => {
    const admin = new pg.Client({ connectionString: pgServer })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
  return { url: url.href, drop }
}

/** Seconds from `npm start` to the first /healthz 200, on this checkout as it is. */
async function timeNpmStart () {
  const started = performance.now()
  // Its own process group: npm does not pass signals on to the service, the group gets them.
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT, detached: true, env: { ...process.env, PORT: '0', DATABASE_URL: 'memory:', API_TOKENS: TOKEN }, stdio: ['ignore', 'pipe', 'inherit']
  })
  try {
    const address = await listening(npm)
    while ((await fetch(`${address}/healthz`).catch(() => undefined))?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 10))
    return (performance.now() - started) / 1000
  } finally {
    process.kill(-npm.pid, 'SIGTERM')
    await once(npm, 'exit')
  }
}

if (!isBuildCurrent()) await import('./build.mjs')
const results = []
try {
  const sqlite = install('sqlite')
  await exercise(sqlite.dir, `sqlite:${join(work, 'data/plants.db')}`)
  results.push(['SQLite', sqlite])

  const traced = install('', true)
  const otlp = await collector()
  const hook = await exercise(traced.dir, 'memory:', { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint })
  otlp.close()
  const wanted = ['POST /plants', 'INSERT plants', 'webhook plant.created']
  if (!wanted.every((name) => otlp.names.includes(name)) || !/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/.test(hook.traceparent)) {
    throw new Error(`tracing: spans ${otlp.names.join(', ')}; the webhook's traceparent ${hook.traceparent}`)
  }
  results.push(['memory store only, with tracing (--stores \'\' --tracing)', traced])

  const database = await postgresDatabase()
  if (database.reason !== undefined) {
    if (process.env.CI === 'true') throw new Error(database.reason)
    process.stdout.write(`\nskipped the PostgreSQL runtime: ${database.reason}\n`)
  } else {
    try {
      const postgres = install('postgres')
      await exercise(postgres.dir, database.url)
      results.push(['PostgreSQL', postgres])
    } finally {
      await database.drop()
    }
  }
} finally {
  if (!process.argv.includes('--keep')) rmSync(work, { recursive: true, force: true })
}
process.stdout.write('\nThe runtime folder, installed with npm ci --omit=dev, started, a plant created and read, its webhook delivered and signed, SIGTERM: exit 0\n')
for (const [store, { packages, megabytes }] of results) {
  process.stdout.write(`  ${store}: ${packages} packages, ${megabytes.toFixed(1)} MB\n`)
}
const startSeconds = await timeNpmStart()
process.stdout.write(`npm start on this unchanged checkout: /healthz answered after ${startSeconds.toFixed(2)} s\n`)
// About 2 s is the promise; a loaded machine may take longer, a rebuild (~9 s) never passes.
if (startSeconds > 5) throw new Error('npm start took over 5 s: did it rebuild an unchanged checkout?')
if (existsSync(work) && process.argv.includes('--keep')) process.stdout.write(`kept in ${work}\n`)
