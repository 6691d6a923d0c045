import { join } from 'node:path'
import Fastify from 'fastify'
import { Histogram, Registry } from 'prom-client'
import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import metricsPlugin, { createMetrics } from '../../service/observe/metrics.js'
import { SeriesHistogram } from '../../service/observe/series-histogram.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { AUTH, build, createPlant } from '../helpers/app.js'

/** The value of one sample line of the Prometheus text, by its exact series name and labels. */
function sample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

t.test('GET /metrics serves Prometheus text without a token', async (t) => {
  const { app } = await build(t)
  const response = await app.inject({ url: '/metrics' })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(response.body, /# TYPE process_cpu_seconds_total counter/, 'default process metrics')
  t.match(response.body, /# TYPE nodejs_eventloop_lag_seconds gauge/)
})

t.test('requests are counted and timed by method, route and status', async (t) => {
  const { app } = await build(t)
  await createPlant(app, { id: 1, name: 'n' })
  await createPlant(app, { id: 1, name: 'n' })
  await createPlant(app, { id: 2, name: 7 })
  await app.inject({ url: '/plants/1', headers: AUTH })
  const text = (await app.inject({ url: '/metrics' })).body
  const count = (route: string, status: number, method = 'POST') =>
    sample(text, `http_request_duration_seconds_count{method="${method}",route="${route}",status_code="${status}"}`)
  t.equal(count('/plants', 200), 1)
  t.equal(count('/plants', 409), 1)
  t.equal(count('/plants', 400), 1)
  t.equal(count('/plants/:id', 200, 'GET'), 1, 'routes are labelled by pattern, not by id')
  t.equal(sample(text, 'plant_store_plants_created_total'), 1)
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="create",outcome="ok"}'), 1)
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="create",outcome="409"}'), 1)
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="get",outcome="ok"}'), 1)
})

t.test('store failures are timed with their status as the outcome', async (t) => {
  const store = { ...createMemoryStore(), list: async () => { throw new StoreUnavailableError() }, delete: async () => { throw new Error('bug') } }
  const { app } = await build(t, { store })
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 503)
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })).statusCode, 500)
  await app.inject({ url: '/readyz' })
  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="list",outcome="503"}'), 1)
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="delete",outcome="500"}'), 1)
  t.equal(sample(text, 'plant_store_operation_duration_seconds_count{operation="ping",outcome="ok"}'), 1)
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="unknown",status_code="404"}'), undefined)
})

t.test('unknown routes are counted under one label, not one per path', async (t) => {
  const { app } = await build(t)
  await app.inject({ url: '/nope/1' })
  await app.inject({ url: '/nope/2' })
  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="unknown",status_code="404"}'), 2)
})

t.test('a HEAD request is counted once, under the route it was answered by', async (t) => {
  const { app } = await build(t)
  await app.inject({ method: 'HEAD', url: '/healthz' })
  await app.inject({ url: '/healthz' })
  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(sample(text, 'http_request_duration_seconds_count{method="HEAD",route="/healthz",status_code="200"}'), 1)
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="/healthz",status_code="200"}'), 1)
})

t.test('a SeriesHistogram prints exactly what prom-client\'s Histogram prints for the same observations', async (t) => {
  const options = { name: 'h_seconds', help: 'A histogram', labelNames: ['a', 'b'] as const, buckets: [0.001, 0.01, 1] }
  const ours = new Registry()
  const theirs = new Registry()
  const series = new SeriesHistogram({ ...options, registers: [ours] })
  const histogram = new Histogram({ ...options, registers: [theirs] })
  const observations: Array<[string, string, number]> = [['x', 'y', 0.0005], ['x', 'y', 0.001], ['x', 'y', 0.5], ['x', 'z', 5], ['w', 'y', 0.01]]
  for (const [a, b, value] of observations) {
    series.series(a, b).observe(value)
    histogram.observe({ a, b }, value)
  }
  t.equal(await ours.metrics(), await theirs.metrics())
  ours.resetMetrics()
  theirs.resetMetrics()
  series.series('x', 'y').observe(0.002)
  histogram.observe({ a: 'x', b: 'y' }, 0.002)
  t.match(await ours.metrics(), /h_seconds_count\{a="x",b="y"\} 1/, 'reset, then counted again')
  t.match(await ours.metrics(), /h_seconds_count\{a="x",b="z"\} 0/, 'a reset series stays, at zero')
})

t.test('a route\'s own onResponse hooks still run beside the one that times it', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  const metrics = createMetrics()
  await app.register(metricsPlugin, { metrics })
  const seen: string[] = []
  app.get('/one', { onResponse: (_request, _reply, done) => { seen.push('one'); done() } }, async () => 'ok')
  app.get('/two', { onResponse: [(_request, _reply, done) => { seen.push('two'); done() }] }, async () => 'ok')
  await app.inject({ url: '/one' })
  await app.inject({ url: '/two' })
  t.same(seen, ['one', 'two'])
  const text = await metrics.registry.metrics()
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="/one",status_code="200"}'), 1)
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="/two",status_code="200"}'), 1)
})

t.test('the WAL size metric is 0 while there is no -wal file', async (t) => {
  const metrics = createMetrics({ sqliteFile: join(t.testdir(), 'none.db') })
  t.match(await metrics.registry.metrics(), /^plant_store_sqlite_wal_bytes 0$/m)
})
