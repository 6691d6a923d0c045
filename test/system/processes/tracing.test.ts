import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { openTelemetryLoads } from '../../helpers/loaded-modules.js'
import { plantBody } from '../../helpers/load.js'
import { startReceiver, type Received } from '../../helpers/receiver.js'
import { exitWithin, startServer, type EnvOverrides } from '../../helpers/server-process.js'
import { TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret } from '../../helpers/webhooks.js'

const BUNDLE = fileURLToPath(new URL('../../../dist/server.mjs', import.meta.url))
const NAME = 'Traced secret fern'
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/

interface Attribute { key: string, value: { stringValue?: string, intValue?: string | number } }
interface Span {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Attribute[]
  links?: Array<{ traceId: string, spanId: string }>
}
interface Export { resourceSpans: Array<{ resource: { attributes: Attribute[] }, scopeSpans: Array<{ spans: Span[] }> }> }

const attribute = (attributes: Attribute[], key: string) => {
  const value = attributes.find((each) => each.key === key)?.value
  return value?.stringValue ?? value?.intValue
}

/** The built service with a webhook endpoint and `env`; one plant created, its delivery received, then SIGTERM. */
async function createAndDeliver (t: Test, env: EnvOverrides) {
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
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 30_000), { code: 0, signal: null }, 'SIGTERM: exit 0')
  return { delivery: hook.received[0]!, loaded: loads.loaded() }
}

/** An OTLP/HTTP collector: it keeps each JSON export POSTed to /v1/traces. */
async function collector (t: Test) {
  const receiver = await startReceiver(t, (response) => {
    response.setHeader('content-type', 'application/json')
    response.end('{}')
  })
  const exports = (): Array<Received & { export: Export }> => receiver.received.map((received) => ({ ...received, export: JSON.parse(received.body) as Export }))
  return { endpoint: `http://127.0.0.1:${receiver.port}`, received: receiver.received, exports }
}

t.test('with OTEL_EXPORTER_OTLP_ENDPOINT, a create is traced from its request through its store operation to its webhook attempt', async (t) => {
  const otlp = await collector(t)
  const { delivery, loaded } = await createAndDeliver(t, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_SERVICE_NAME: 'plant-store-traced' })
  t.ok(loaded.some((path) => path.includes('@fastify/otel')), 'OpenTelemetry is loaded (the recorder sees it)')
  const exports = otlp.exports()
  t.ok(exports.length > 0, 'spans are exported')
  t.ok(otlp.received.every(({ url, headers }) => url === '/v1/traces' && /^application\/json/.test(headers['content-type']!)), 'as OTLP/HTTP JSON, to /v1/traces')
  const resources = exports.flatMap(({ export: { resourceSpans } }) => resourceSpans)
  t.ok(resources.every(({ resource }) => attribute(resource.attributes, 'service.name') === 'plant-store-traced'), 'named by OTEL_SERVICE_NAME')
  const spans = resources.flatMap(({ scopeSpans }) => scopeSpans.flatMap(({ spans }) => spans))

  const request = spans.find(({ name }) => name === 'POST /plants')
  t.ok(request, 'the request has a span named by its route')
  t.equal(request!.kind, 2, 'a server span')
  t.equal(attribute(request!.attributes, 'http.route'), '/plants')
  const store = spans.find(({ name }) => name === 'INSERT plants')
  t.ok(store, 'the store operation has a span')
  t.equal(store!.traceId, request!.traceId, 'in the request\'s trace')
  const byId = new Map(spans.map((span) => [span.spanId, span]))
  let ancestor: Span | undefined = store
  while (ancestor !== undefined && ancestor !== request) ancestor = byId.get(ancestor.parentSpanId ?? '')
  t.equal(ancestor, request, 'below the request\'s span')
  t.equal(attribute(store!.attributes, 'db.system'), 'sqlite')
  t.equal(attribute(store!.attributes, 'db.system.name'), 'sqlite')
  t.equal(attribute(store!.attributes, 'db.operation.name'), 'INSERT')
  t.notOk(JSON.stringify(spans).includes(NAME), 'no attribute holds the plant\'s name')

  const attempt = spans.find(({ name }) => name === 'webhook plant.created')
  t.ok(attempt, 'the delivery attempt has a span')
  t.same(attempt!.links?.map(({ traceId, spanId }) => ({ traceId, spanId })), [{ traceId: store!.traceId, spanId: store!.spanId }],
    'linked to the create that caused it')
  t.equal(attribute(attempt!.attributes, 'plant_store.webhook.outcome'), 'success')
  t.ok(Number(attribute(attempt!.attributes, 'thread.id')) > 0, 'made in the delivery thread (thread.id), not on the thread that serves HTTP (0)')
  const [, traceId, spanId] = TRACEPARENT.exec(String(delivery.headers.traceparent)) ?? []
  t.same({ traceId, spanId }, { traceId: attempt!.traceId, spanId: attempt!.spanId }, 'the delivery request carries the attempt\'s traceparent')
})

t.test('without OTEL_* variables nothing of OpenTelemetry is loaded, exported or sent', async (t) => {
  const otlp = await collector(t)
  const { delivery, loaded } = await createAndDeliver(t, {})
  t.same(loaded, [], 'no @opentelemetry or @fastify/otel module is loaded')
  t.equal(delivery.headers.traceparent, undefined, 'the delivery request carries no traceparent')
  t.same(otlp.received, [], 'nothing is exported')
})

t.test('OTEL_SDK_DISABLED=true keeps tracing off, an endpoint set or not', async (t) => {
  const otlp = await collector(t)
  const { delivery, loaded } = await createAndDeliver(t, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_SDK_DISABLED: 'true' })
  t.same(loaded, [], 'nothing of OpenTelemetry is loaded')
  t.equal(delivery.headers.traceparent, undefined)
  t.same(otlp.received, [], 'nothing is exported')
})
