/**
 * The load and rate limits of the service, and the connection settings it derives from its
 * environment. The HTTP timeouts themselves (Node's timers, in real time) are tested in
 * test/system/processes/http-timeouts.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { connectionOptions } from '../../service/config/app-options.js'
import { loadConfig } from '../../service/config/index.js'
import { assertCreateShed, build, createPlant, OTHER_TOKEN, storedPlants, TOKEN } from '../helpers/app.js'

// The subtests are independent; the two that keep the loop busy run together, at the start.
t.jobs = 3

/**
 * Keeps the event loop busy for `ms`, in slices of 100 ms with a turn of the loop between them:
 * every load sample taken meanwhile sees it over half busy and each of its turns delayed.
 */
async function busyFor (ms: number) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    const slice = Math.min(until, Date.now() + 100)
    while (Date.now() < slice);
    await new Promise((resolve) => setImmediate(resolve))
  }
}

t.test('an overloaded process sheds plant requests with 503 and Retry-After, and nothing is stored', async (t) => {
  const { app, store } = await build(t, { pressure: { maxEventLoopDelay: 20, retryAfter: 7 } })
  // Samples are taken once a second: the second one sees nothing but the busy loop's delays.
  await busyFor(2200)
  await sleep(50)
  await assertCreateShed(t, app, store, 7)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness is not shed')
})

t.test('event-loop utilization and heap use above their thresholds shed plant requests too', async (t) => {
  const busy = await build(t, { pressure: { maxEventLoopUtilization: 0.5 } })
  const heavy = await build(t, { pressure: { maxHeapUsedBytes: 1 } })
  // The second sample sees nothing but the busy loop; the heavy app takes its samples meanwhile.
  await busyFor(2200)
  await sleep(50)
  t.equal((await createPlant(busy.app, { id: 1, name: 'n' })).statusCode, 503, 'a loop busy over half the time')
  t.equal((await createPlant(heavy.app, { id: 1, name: 'n' })).statusCode, 503, 'a heap over its threshold')
  t.same([...await storedPlants(busy.store), ...await storedPlants(heavy.store)], [])
})

t.test('with a rate limit, each token gets its own budget; beyond it 429 in the Error shape', async (t) => {
  const { app, store } = await build(t, { rateLimit: { max: 2, timeWindow: 60_000 } })
  t.equal((await createPlant(app, { id: 1, name: 'n' })).statusCode, 200)
  // The scheme's spelling does not make a new budget.
  t.equal((await createPlant(app, { id: 2, name: 'n' }, { authorization: `bearer ${TOKEN}` })).statusCode, 200)
  const limited = await createPlant(app, { id: 3, name: 'n' })
  t.equal(limited.statusCode, 429)
  t.same(limited.json(), { error: 429, message: 'Too many requests for this token, try again later' })
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  t.equal((await createPlant(app, { id: 4, name: 'n' }, { authorization: `Bearer ${OTHER_TOKEN}` })).statusCode, 200,
    'another token is not limited')
  const anonymous = await app.inject({ method: 'POST', url: '/plants', payload: { id: 5, name: 'n' } })
  t.equal(anonymous.statusCode, 401, 'an anonymous request is refused before it is counted')
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n, 2n, 4n])
})

t.test('without a rate limit configured, there is none', async (t) => {
  const { app } = await build(t)
  for (let id = 0; id < 50; id++) t.equal((await createPlant(app, { id, name: 'n' })).statusCode, 200)
})

t.test('the connection limits follow the settings', async (t) => {
  const env = {
    CONNECTION_TIMEOUT: '1000', MAX_HEADER_SIZE: '2048', MAX_CONNECTIONS: '100', TOKENLESS_CONNECTION_SHARE: '0.25', MAX_HEADERS_COUNT: '50', BODY_MIN_RATE: '10', BODY_RATE_GRACE: '2000'
  }
  t.same(connectionOptions(loadConfig(env), 1024), {
    connectionTimeout: 1000,
    requestTimeout: 30000,
    keepAliveTimeout: 72000,
    maxConnections: 100,
    maxTokenless: 25,
    minBodyRate: 10,
    bodyRateGrace: 2000,
    maxHeadersCount: 50,
    // Node looks for expired headers and requests this often: a twentieth of the shorter timeout.
    http: { requestTimeout: 30000, headersTimeout: 10000, maxHeaderSize: 2048, connectionsCheckingInterval: 500 }
  })
  t.match(connectionOptions(loadConfig({ HEADERS_TIMEOUT: '300', REQUEST_TIMEOUT: '0' }), 1024).http,
    { connectionsCheckingInterval: 15 }, 'REQUEST_TIMEOUT=0: a twentieth of HEADERS_TIMEOUT')
})
