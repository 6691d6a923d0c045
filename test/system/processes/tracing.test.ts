import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { openTelemetryLoads } from '../../helpers/loaded-modules.js'
import { plantBody, pool, send } from '../../helpers/load.js'
import { blackHole, closedPort, grpcCollector, httpCollector, type Collector, type CollectedSpan } from '../../helpers/otlp-collector.js'
import { startReceiver } from '../../helpers/receiver.js'
import { exitWithin, startServer, type EnvOverrides } from '../../helpers/server-process.js'
import { TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret } from '../../helpers/webhooks.js'

const BUNDLE = fileURLToPath(new URL('../../../dist/server.mjs', import.meta.url))
const NAME = 'Traced secret fern'
// The memory test: creates sent while the collector never answers, the heap growth allowed, and
// about what one of a create's three spans takes on the heap (a span with six attributes measured
// 970 bytes once collected).
const CREATES = 30_000
const HEAP_BOUND = 40 * 2 ** 20
const SPAN_BYTES = 1000
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/

/** The built service with a webhook endpoint and `env`; one plant created, its delivery received, then SIGTERM. */
async function createAndDeliver (t: Test, env: EnvOverrides, signalled = () => {}) {
  const folder = t.testdir({})
  const loads = openTelemetryLoads(folder)
  const hook = await startReceiver(t, (response) => { response.statusCode = 204; response.end() })
  const server = await startServer(t, { ...webhookEnv(`sqlite:${join(folder, 'plants.db')}`, hook.url, newSecret()), ...loads.env, ...env },
    { args: [...loads.nodeArgs, BUNDLE] })
  const created = await fetch(`${server.url}/plants`, {
    method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody('7', NAME)
  })
  t.equal(created.status, 200, 'the create succeeds')
  t.ok(await eventually(() => hook.received.length > 0), 'its webhook is delivered')
  signalled()
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 30_000), { code: 0, signal: null }, 'SIGTERM: exit 0')
  return { delivery: hook.received[0]!, loaded: loads.loaded(), server }
}

/** The spans of one traced create: its request, its store operation below it, its webhook attempt in the delivery thread, linked. */
function assertTraced (t: Test, collector: Collector, deliveryTraceparent: unknown) {
  const resources = collector.resources()
  t.ok(resources.length > 0, 'spans are exported')
  t.ok(resources.every(({ attributes }) => attributes['service.name'] === 'plant-store-traced'), 'named by OTEL_SERVICE_NAME')
  const spans = collector.spans()
  const request = spans.find(({ name }) => name === 'POST /plants')
  t.ok(request, 'the request has a span named by its route')
  t.equal(request!.kind, 2, 'a server span')
  t.equal(request!.attributes['http.route'], '/plants')
  const store = spans.find(({ name }) => name === 'INSERT plants')
  t.ok(store, 'the store operation has a span')
  t.equal(store!.traceId, request!.traceId, 'in the request\'s trace')
  const byId = new Map(spans.map((span) => [span.spanId, span]))
  let ancestor: CollectedSpan | undefined = store
  while (ancestor !== undefined && ancestor !== request) ancestor = byId.get(ancestor.parentSpanId)
  t.equal(ancestor, request, 'below the request\'s span')
  t.equal(store!.attributes['db.system'], 'sqlite')
  t.equal(store!.attributes['db.system.name'], 'sqlite')
  t.equal(store!.attributes['db.operation.name'], 'INSERT')
  t.notOk(JSON.stringify(spans).includes(NAME), 'no attribute holds the plant\'s name')

  const attempt = spans.find(({ name }) => name === 'webhook plant.created')
  t.ok(attempt, 'the delivery attempt has a span')
  t.same(attempt!.links, [{ traceId: store!.traceId, spanId: store!.spanId }], 'linked to the create that caused it')
  t.equal(attempt!.attributes['plant_store.webhook.outcome'], 'success')
  t.ok(Number(attempt!.attributes['thread.id']) > 0, 'made in the delivery thread (thread.id), not on the thread that serves HTTP (0)')
  const [, traceId, spanId] = TRACEPARENT.exec(String(deliveryTraceparent)) ?? []
  t.same({ traceId, spanId }, { traceId: attempt!.traceId, spanId: attempt!.spanId }, 'the delivery request carries the attempt\'s traceparent')
}

const PROTOCOLS = [
  { protocol: undefined, collector: httpCollector, path: '/v1/traces', type: /^application\/x-protobuf/, says: 'OTLP/HTTP protobuf, the default' },
  { protocol: 'http/protobuf', collector: httpCollector, path: '/v1/traces', type: /^application\/x-protobuf/, says: 'OTLP/HTTP protobuf' },
  { protocol: 'http/json', collector: httpCollector, path: '/v1/traces', type: /^application\/json/, says: 'OTLP/HTTP JSON' },
  { protocol: 'grpc', collector: grpcCollector, path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export', type: /^application\/grpc/, says: 'OTLP/gRPC' }
] as const

for (const { protocol, collector, path, type, says } of PROTOCOLS) {
  t.test(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol ?? '(unset)'}: a create is traced from its request through its store operation to its webhook attempt, sent as ${says}`, async (t) => {
    const otlp = await collector(t)
    const { delivery, loaded, server } = await createAndDeliver(t, {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'plant-store-traced',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-secret'
    })
    t.ok(loaded.some((each) => each.includes('@fastify/otel')), 'OpenTelemetry is loaded (the recorder sees it)')
    t.ok(otlp.exports.length > 0 && otlp.exports.every((each) => each.path === path && type.test(each.contentType ?? '')), `as ${says}, to ${path}`)
    assertTraced(t, otlp, delivery.headers.traceparent)
    const line = server.logs().find(({ msg }) => msg === 'tracing on: spans are sent over OTLP')
    t.match(line, { level: 30, protocol: protocol ?? 'http/protobuf', endpoint: protocol === 'grpc' ? otlp.endpoint : `${otlp.endpoint}/v1/traces` },
      'one start-up line says tracing is on, the protocol and the endpoint')
    t.notOk(server.stdout().includes('collector-secret'), 'never the headers')
  })
}

t.test('without OTEL_* variables nothing of OpenTelemetry is loaded, exported or sent', async (t) => {
  const otlp = await httpCollector(t)
  const { delivery, loaded, server } = await createAndDeliver(t, {})
  t.same(loaded, [], 'no @opentelemetry or @fastify/otel module is loaded')
  t.equal(delivery.headers.traceparent, undefined, 'the delivery request carries no traceparent')
  t.same(otlp.exports, [], 'nothing is exported')
  t.notOk(server.logs().some(({ msg }) => String(msg).startsWith('tracing')), 'and no line says tracing is on')
})

t.test('OTEL_SDK_DISABLED=true keeps tracing off, an endpoint set or not', async (t) => {
  const otlp = await httpCollector(t)
  const { delivery, loaded } = await createAndDeliver(t, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_SDK_DISABLED: 'true' })
  t.same(loaded, [], 'nothing of OpenTelemetry is loaded')
  t.equal(delivery.headers.traceparent, undefined)
  t.same(otlp.exports, [], 'nothing is exported')
})

// The shutdown's bound: what is left of SHUTDOWN_TIMEOUT (10 s) once a margin for a loaded machine is kept.
const SHUTDOWN_BOUND_MS = 7000

/** createAndDeliver, timing its SIGTERM to the exit. */
async function createAndDeliverTimed (t: Test, env: EnvOverrides) {
  const started = { at: 0 }
  const result = await createAndDeliver(t, env, () => { started.at = performance.now() })
  return { ...result, took: performance.now() - started.at }
}

const MISBEHAVING = [
  { says: 'a closed port', endpoint: async () => closedPort() },
  { says: 'a collector that accepts and never answers', endpoint: async (t: Test) => (await blackHole(t)).endpoint },
  { says: 'a collector that answers after 8 s', endpoint: async (t: Test) => (await blackHole(t, 8000)).endpoint }
]

t.test('shutdown stays within SHUTDOWN_TIMEOUT whatever the collector does: the last spans are given up after a bound, in one line', async (t) => {
  const off = await createAndDeliverTimed(t, {})
  t.comment(`tracing off: SIGTERM to exit in ${Math.round(off.took)} ms`)
  for (const { says, endpoint } of MISBEHAVING) {
    for (const protocol of ['http/protobuf', 'grpc']) {
      const { took, server } = await createAndDeliverTimed(t, { OTEL_EXPORTER_OTLP_ENDPOINT: await endpoint(t), OTEL_EXPORTER_OTLP_PROTOCOL: protocol })
      t.comment(`${says}, ${protocol}: SIGTERM to exit in ${Math.round(took)} ms`)
      t.ok(took < SHUTDOWN_BOUND_MS, `${says}, ${protocol}: exit 0 in ${Math.round(took)} ms, within ${SHUTDOWN_BOUND_MS} ms`)
      t.ok(server.logs().some(({ level, msg }) => level === 40 && String(msg).startsWith('tracing: some spans could not be sent')),
        `${says}, ${protocol}: one line says spans were dropped`)
    }
  }
})

/** The service's heap in use, as /metrics tells it: the least of five readings 0.4 s apart, which leaves out most garbage. */
async function heapUsed (url: string): Promise<number> {
  let least = Infinity
  for (let reading = 0; reading < 5; reading++) {
    const text = await (await fetch(`${url}/metrics`)).text()
    least = Math.min(least, Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)![1]))
    await new Promise((resolve) => setTimeout(resolve, 400))
  }
  return least
}

t.test('while the collector never answers, the spans waiting to be sent cost bounded memory: the rest are dropped', async (t) => {
  const collector = await blackHole(t)
  const folder = t.testdir({})
  const server = await startServer(t, {
    API_TOKENS: TOKEN,
    DATABASE_URL: `sqlite:${join(folder, 'plants.db')}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    // Each export waits long for the answer that never comes.
    OTEL_EXPORTER_OTLP_TIMEOUT: '60000'
  }, { args: [BUNDLE] })
  const create = (index: number) => send(server.url, TOKEN, 'POST', '/plants', plantBody(String(index), 'fern')).then(({ status }) => {
    if (status !== 200) throw new Error(`create ${index}: ${status}`)
  })
  await pool(2000, 16, create)
  const before = await heapUsed(server.url)
  await pool(CREATES, 16, (index) => create(2000 + index))
  const after = await heapUsed(server.url)
  t.comment(`heap in use: ${(before / 2 ** 20).toFixed(1)} MiB after 2,000 traced creates, ${(after / 2 ** 20).toFixed(1)} MiB after ${CREATES} more (${collector.requests()} exports sent, none answered)`)
  t.ok(collector.requests() > 0, 'exports were sent, and left waiting')
  t.ok(after - before < HEAP_BOUND, `the heap grew by ${((after - before) / 2 ** 20).toFixed(1)} MiB over ${CREATES} traced creates, less than ${HEAP_BOUND / 2 ** 20} MiB: ` +
    `held, their ${3 * CREATES} spans would take some ${Math.round(3 * CREATES * SPAN_BYTES / 2 ** 20)} MiB`)
})
