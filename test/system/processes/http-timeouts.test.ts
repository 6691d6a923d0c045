import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { connectionOptions } from '../../../service/app.js'
import { loadConfig } from '../../../service/config/index.js'
import { assertCreateShed, build, createPlant, listening, OTHER_TOKEN, settingsFrom, storedPlants, TOKEN } from '../../helpers/app.js'
import { exchange } from '../../helpers/exchange.js'

// The subtests are independent, and most wait on a timeout: three run at a time, so that the waits
// overlap the default HEADERS_TIMEOUT's 10 s. The two that keep the loop busy come first, together,
// so that the shorter timeouts are measured after them, not held up by them.
t.jobs = 3

/**
 * Keeps the event loop busy for `ms`, in slices of 100 ms with a turn of the loop between them:
 * every load sample taken meanwhile sees it over half busy and each of its turns delayed, while
 * the timeouts the other subtests wait for are held up by at most a slice.
 */
async function busyFor (ms: number) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    const slice = Math.min(until, Date.now() + 100)
    while (Date.now() < slice);
    await new Promise((resolve) => setImmediate(resolve))
  }
}

// Each timeout must act no sooner than its setting and long before the next mechanism that could
// close the connection (the 30 s to 72 s defaults), with seconds of slack for a loaded machine.
const TIMED_OUT = /^HTTP\/1\.1 408 [^]*\r\n\r\n\{"error":408,"message":"Request timed out"\}$/

// First, so that the longest wait starts before the others.
t.test('the default HEADERS_TIMEOUT (10 s) acts within 20 s, not at Node\'s 30 s check', { timeout: 60_000 }, async (t) => {
  const { port } = await listening(t, {}, settingsFrom({}))
  const { answer, waited } = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(waited >= 9950 && waited < 20_000, `after ${waited} ms`)
})

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

t.test('HEADERS_TIMEOUT=1000: headers still incomplete after a second are answered 408 within a few seconds', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '1000' }))
  const { answer, waited } = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1\r\n')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(waited >= 950 && waited < 4000, `after ${waited} ms`)
})

t.test('REQUEST_TIMEOUT=2000: a body still incomplete after two seconds is answered 408 within a few seconds, nothing stored', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '1000', REQUEST_TIMEOUT: '2000' }))
  const { answer, waited } = await exchange(port,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":1,"name":"`, 'a')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(waited >= 1950 && waited < 6000, `after ${waited} ms`)
  t.same(await storedPlants(store), [])
})

t.test('CONNECTION_TIMEOUT=1000: a request that has begun and then goes silent is answered 408, nothing stored', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ CONNECTION_TIMEOUT: '1000', HEADERS_TIMEOUT: '20000' }))
  const headers = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n')
  t.match(headers.answer, TIMED_OUT, 'headers begun: a 408 in the Error shape')
  t.ok(headers.waited >= 950 && headers.waited < 4000, `after ${headers.waited} ms`)
  const body = await exchange(port,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":1,`)
  t.match(body.answer, TIMED_OUT, 'body begun: a 408 in the Error shape')
  t.ok(body.waited >= 950 && body.waited < 4000, `after ${body.waited} ms`)
  t.same(await storedPlants(store), [])
})

t.test('CONNECTION_TIMEOUT=1000: a silent connection is closed without a word', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ CONNECTION_TIMEOUT: '1000' }))
  const silent = await exchange(port, '')
  t.equal(silent.answer, '', 'nothing sent on a connection that said nothing')
  t.ok(silent.waited >= 950 && silent.waited < 4000, `closed after ${silent.waited} ms`)
})

t.test('KEEP_ALIVE_TIMEOUT=1000: a connection idle after its answer is closed without another word', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ KEEP_ALIVE_TIMEOUT: '1000' }))
  const idle = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  // Node keeps the connection a second longer than it tells the client, so that the client closes first.
  t.match(idle.answer, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/, 'only the answer to its request')
  t.ok(idle.waited >= 950 && idle.waited < 5000, `closed after ${idle.waited} ms`)
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
