import t from 'tap'
import { StoreUnavailableError } from '../plugins/http-errors.js'
import { createMemoryStore } from '../plugins/store/memory.js'
import { AUTH, build, createPlant } from './helpers/app.js'

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
