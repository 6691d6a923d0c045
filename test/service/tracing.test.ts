import { propagation } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import t from 'tap'
import { loadConfig } from '../../service/config/index.js'
import { loadTracing, systemOf } from '../../service/observe/tracing/index.js'
import { samplerOf } from '../../service/observe/tracing/sdk.js'
import { tracerProvider } from '../../service/observe/tracing/provider.js'
import { otlpEndpoint, otlpProtocol, tracingOn, type OtlpProtocol } from '../../service/observe/tracing/settings.js'
import { linksTo } from '../../service/observe/tracing/webhooks.js'
import type { ClaimedDelivery } from '../../plugins/store/outbox.js'
import { tracedAttempt } from '../../plugins/webhooks/delivery/tracing.js'
import { AUTH, build, collectLogs, JSON_TYPE } from '../helpers/app.js'
import { blackHole, closedPort, grpcCollector, httpCollector, type CollectedSpan } from '../helpers/otlp-collector.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

const attributesOf = (span: CollectedSpan) => span.attributes

t.test('traces of the app: a span per request named by its route, per store operation (its status on failure), per webhook attempt', async (t) => {
  const collector = await httpCollector(t)
  let answers = 0
  // The first delivery fails (500), its retry succeeds.
  const hook = await startReceiver(t, (response) => { response.statusCode = answers++ === 0 ? 500 : 204; response.end() })
  const store = `sqlite:${t.testdir({})}/plants.db`
  const config = loadConfig({ DATABASE_URL: store, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.endpoint}/v1/traces` })
  // The exporter reads its endpoint from the environment.
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  t.teardown(() => { delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })
  const tracing = await loadTracing(config)
  // A second endpoint where nothing listens: its attempts fail without a status.
  const webhooks = webhooksFor([{ url: hook.url, secret: newSecret() }, { url: 'http://127.0.0.1:9/hook', secret: newSecret() }], { retrySchedule: [50] })
  const { app } = await build(t, { store, webhooks }, { tracing })

  const create = () => app.inject({ method: 'POST', url: '/plants?token=hidden', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":1,"name":"Private fern"}' })
  t.equal((await create()).statusCode, 200)
  t.equal((await create()).statusCode, 409, 'the same id again')
  t.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 200)
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })).statusCode, 204)
  t.equal((await app.inject({ url: '/nowhere' })).statusCode, 404)
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'a readiness probe: its request span only')
  t.ok(await eventually(() => hook.received.length === 2), 'the delivery fails once, then succeeds')
  // The unreachable endpoint's attempts are made alongside: each span ends before its attempt is counted.
  const unreachableTried = /^plant_store_webhook_attempts_total\{endpoint="e1",outcome="network"\} [1-9]/m
  t.ok(await eventually(async () => unreachableTried.test((await app.inject({ url: '/metrics' })).body)), 'the unreachable endpoint was tried')
  await app.close()

  t.ok(collector.exports.every(({ contentType }) => contentType === 'application/x-protobuf'), 'sent as OTLP/HTTP protobuf, the default')
  const spans = collector.spans()
  const named = (name: string) => spans.filter((span) => span.name === name)
  t.equal(named('POST /plants').length, 2, 'each request is named by its route')
  t.equal(named('GET').length, 1, 'one that matched no route by its method alone')
  t.same(named('POST /plants').map((span) => attributesOf(span)['url.path']), ['/plants', '/plants'], 'its path without the query')
  t.same(named('INSERT plants').map((span) => attributesOf(span)['error.type']), [undefined, '409'], 'a failed operation has its status')
  t.same(attributesOf(named('INSERT plants')[0]!)['db.system'], 'sqlite')
  t.equal(named('SELECT plants').length, 2, 'a read and a page')
  t.equal(named('DELETE plants').length, 1)
  t.equal(named('GET /readyz').length, 1)
  t.notOk(JSON.stringify(collector.resources()).match(/Private fern|hidden/), 'no value, no query')
  const attempts = named('webhook plant.created').filter((span) => attributesOf(span)['plant_store.webhook.endpoint'] === 'e0')
  t.same(attempts.map((span) => [attributesOf(span)['plant_store.webhook.outcome'], attributesOf(span)['error.type']]),
    [['http_error', '500'], ['success', undefined]], 'an attempt span each, a failed one with its status')
  const unreachable = named('webhook plant.created').filter((span) => attributesOf(span)['plant_store.webhook.endpoint'] === 'e1')
  t.ok(unreachable.length > 0 && unreachable.every((span) =>
    attributesOf(span)['plant_store.webhook.outcome'] === 'network' && attributesOf(span)['error.type'] === 'ECONNREFUSED'), 'one that had no answer: its error')
  t.ok(attempts.every((span) => span.links?.[0]?.spanId === named('INSERT plants')[0]!.spanId), 'each linked to the create')
  t.ok([...attempts, ...unreachable].every((span) => Number(attributesOf(span)['thread.id']) > 0),
    'each made in the delivery thread (thread.id), not on the thread that serves HTTP (0)')
  t.same(hook.received.map(({ headers }) => headers.traceparent), attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`),
    'each request carries its attempt\'s traceparent')
})

t.test('an attempt links to the span its event stored, when it stored a readable one', async (t) => {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  t.same(linksTo(undefined), [], 'none stored')
  t.same(linksTo('not a traceparent'), [], 'one that cannot be read')
  t.match(linksTo('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), [{ context: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' } }])
})

t.test('the database system of each store, as OpenTelemetry names it', async (t) => {
  t.same(['sqlite:data/plants.db', 'postgres://u@h/d', 'memory:'].map(systemOf), ['sqlite', 'postgresql', 'memory'])
})

t.test('OTEL_TRACES_SAMPLER: each standard sampler, with its ratio', async (t) => {
  t.equal(samplerOf('always_on', 1).toString(), 'AlwaysOnSampler')
  t.equal(samplerOf('always_off', 1).toString(), 'AlwaysOffSampler')
  t.equal(samplerOf('traceidratio', 0.25).toString(), 'TraceIdRatioBased{0.25}')
  t.match(samplerOf('parentbased_always_on', 1).toString(), /^ParentBased\{root=AlwaysOnSampler/)
  t.match(samplerOf('parentbased_always_off', 1).toString(), /^ParentBased\{root=AlwaysOffSampler/)
  t.match(samplerOf('parentbased_traceidratio', 0.5).toString(), /^ParentBased\{root=TraceIdRatioBased\{0.5\}/)
})

t.test('the protocol and the endpoint traces go to, as the OTLP exporter specification derives them', async (t) => {
  t.equal(otlpProtocol({}), 'http/protobuf', 'http/protobuf by default')
  t.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'grpc')
  t.equal(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }), 'http/json', 'the traces\' own setting first')
  t.equal(otlpEndpoint({}), 'http://localhost:4318/v1/traces', 'the default over HTTP')
  t.equal(otlpEndpoint({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'http://localhost:4317', 'the default over gRPC')
  t.equal(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318/' }), 'https://collector:4318/v1/traces', '/v1/traces appended to the general URL')
  t.equal(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/base' }), 'http://collector:4318/base/v1/traces')
  t.equal(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'http://collector:4317', 'gRPC: as it is')
  t.equal(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://user:secret@b:2/traces?key=secret' }), 'http://b:2/traces',
    'the traces\' own URL as it is, without its credentials or query')
})

t.test('which settings turn tracing on', async (t) => {
  const endpoint = 'http://127.0.0.1:4318'
  t.equal(tracingOn({}), false, 'none')
  t.equal(tracingOn({ OTEL_SERVICE_NAME: 'x' }), false, 'a name without an endpoint')
  t.equal(tracingOn({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }), true)
  t.equal(tracingOn({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` }), true)
  t.equal(tracingOn({ OTEL_TRACES_EXPORTER: 'otlp' }), true, 'the default endpoint, asked for')
  t.equal(tracingOn({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' }), false)
  t.equal(tracingOn({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'true' }), false)
  t.equal(tracingOn({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'false' }), true)
})

t.test('tracing on without its packages (a runtime folder made without --tracing): one line saying what to do', async (t) => {
  const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
  const missing = Object.assign(new Error('Cannot find package \'@fastify/otel\' imported from /srv/chunks/sdk.mjs\nDid you mean...'), { code: 'ERR_MODULE_NOT_FOUND' })
  await t.rejects(loadTracing(config, () => Promise.reject(missing)), {
    name: 'ConfigError',
    message: 'Invalid configuration: the OTEL_* settings turn tracing on, and its packages are not installed (Cannot find package ' +
      '\'@fastify/otel\' imported from /srv/chunks/sdk.mjs); make the runtime folder with --tracing (npm run runtime -- --tracing), or unset them.'
  })
  const other = new Error('something else')
  await t.rejects(loadTracing(config, () => Promise.reject(other)), other, 'any other failure as it is')
  t.equal(await loadTracing(loadConfig({})), undefined, 'off: nothing')
})

t.test('an attempt whose span has no traceparent is sent with its headers as they are', async (t) => {
  const delivery = { seq: 1n, messageId: 'msg_1', type: 'plant.created', endpoint: 'e', payload: '{}', attempts: 0, claim: 'c', feed: { id: 'f', position: { xid: 0n, seq: 1n } } } satisfies ClaimedDelivery
  const ended: string[] = []
  const sent: Array<Record<string, string>> = []
  const result = await tracedAttempt({ traceContext: () => undefined, attempt: () => ({ traceparent: undefined, end: (r) => ended.push(r.outcome) }) },
    delivery, { a: '1' }, async (headers) => { sent.push(headers); return { outcome: 'success', durationMs: 1 } })
  t.same(sent, [{ a: '1' }])
  t.same(ended, ['success'])
  t.equal(result.outcome, 'success')
})

t.test('an OTEL_* setting the service cannot honour is refused with one line naming it', async (t) => {
  const refusals: Array<[Record<string, string>, string]> = [
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER must be equal to one of the allowed values; set OTEL_TRACES_SAMPLER to one of ' +
      'parentbased_always_on, parentbased_always_off, parentbased_traceidratio, always_on, always_off, traceidratio (default parentbased_always_on).'],
    [{ OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG must be <= 1; set OTEL_TRACES_SAMPLER_ARG to the share of traces the traceidratio samplers keep, 0 to 1 (default 1).'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/thrift' }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be equal to one of the allowed values; set OTEL_EXPORTER_OTLP_PROTOCOL to ' +
      'the OTLP protocol: http/protobuf, http/json, grpc (default http/protobuf).'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT must match pattern "^https?://"; set OTEL_EXPORTER_OTLP_ENDPOINT to the http(s) URL of an ' +
      'OTLP collector, such as http://127.0.0.1:4318 (over HTTP, traces go to its /v1/traces; gRPC: http://127.0.0.1:4317); it turns tracing on.']
  ]
  for (const [env, message] of refusals) t.throws(() => loadConfig(env), { name: 'ConfigError', message: `Invalid configuration: ${message}` }, Object.keys(env)[0])
})

t.test('a tracer provider sends spans in each OTLP protocol, and its shutdown says whether the collector took them, within its bound', async (t) => {
  const endpoints: Array<[OtlpProtocol, string]> = [
    ['http/protobuf', `${(await httpCollector(t)).endpoint}/v1/traces`], ['http/json', `${(await httpCollector(t)).endpoint}/v1/traces`]
  ]
  const grpc = await grpcCollector(t)
  endpoints.push(['grpc', grpc.endpoint])
  t.teardown(() => { delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })
  const provide = async (protocol: OtlpProtocol, endpoint: string) => {
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = endpoint
    const made = await tracerProvider({ sampler: 'always_on', ratio: 1, protocol })
    made.provider.getTracer('test').startSpan(`span over ${protocol}`).end()
    return made
  }
  for (const [protocol, endpoint] of endpoints) {
    const { shutdown } = await provide(protocol, endpoint)
    t.equal(await shutdown(), 'sent', `${protocol}: the collector took it`)
  }
  t.same(grpc.spans().map(({ name }) => name), ['span over grpc'], 'the gRPC collector decoded it')
  // A refused export is retried until the exporter's timeout, on timers that hold the process: 1 s, not 10.
  process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '1000'
  t.teardown(() => { delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT })
  const refused = await provide('http/protobuf', `${await closedPort()}/v1/traces`)
  t.equal(await refused.shutdown(5000), 'dropped', 'a closed port: dropped')
  // The exporter would wait a minute for the answer: only the bound ends the shutdown (or tap's timeout, failing).
  process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '60000'
  const silent = await provide('http/protobuf', `${(await blackHole(t)).endpoint}/v1/traces`)
  t.equal(await silent.shutdown(50), 'dropped', 'a collector that never answers: dropped once the bound has passed')
})

t.test('the app says once that tracing is on, where to, and, at close, that spans the collector did not take were dropped', async (t) => {
  const endpoint = `${await closedPort()}/v1/traces`
  const config = loadConfig({ DATABASE_URL: 'memory:', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint })
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = endpoint
  // Its refused exports are retried for 1 s, not 10 (the exporter's default timeout).
  process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '1000'
  t.teardown(() => { delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT })
  const tracing = await loadTracing(config)
  const { lines, logger } = collectLogs('info')
  const { app } = await build(t, {}, { tracing, logger })
  t.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 404)
  await app.close()
  const target = { protocol: 'http/protobuf', endpoint }
  t.match(lines.filter(({ msg }) => String(msg).startsWith('tracing')), [
    { level: 30, msg: 'tracing on: spans are sent over OTLP', ...target },
    { level: 40, msg: 'tracing: some spans could not be sent (the collector refused them, was unreachable or too slow) and were dropped', ...target }
  ])
})
