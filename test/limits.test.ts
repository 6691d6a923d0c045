import { once } from 'node:events'
import { connect, type AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { connectionOptions } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { AUTH, build, createPlant, OTHER_TOKEN, storedPlants, TOKEN } from './helpers/app.js'

t.test('security headers on every answer, and nothing that names the server', async (t) => {
  const { app } = await build(t)
  for (const url of ['/healthz', '/documentation', '/plants']) {
    const response = await app.inject({ url, headers: AUTH })
    t.match(response.headers, {
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'strict-transport-security': /max-age=/,
      'content-security-policy': /default-src 'self'/
    }, url)
    t.notOk(response.headers['x-powered-by'], `${url}: no x-powered-by`)
    t.notOk(response.headers.server, `${url}: no server header`)
  }
})

t.test('an overloaded process sheds plant requests with 503 and Retry-After, and nothing is stored', async (t) => {
  const { app, store } = await build(t, { pressure: { maxEventLoopDelay: 20, retryAfter: 7 } })
  // Hold the event loop long enough for under-pressure's next sample to see the delay.
  const until = Date.now() + 1200
  while (Date.now() < until);
  await sleep(50)
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 503)
  t.equal(response.headers['retry-after'], '7')
  t.same(response.json(), { error: 503, message: 'The service is overloaded, try again later' })
  t.same(await storedPlants(store), [])
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness is not shed')
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

t.test('a client that sends its headers too slowly is answered 408 in the Error shape', async (t) => {
  const { app } = await build(t, {}, { http: { headersTimeout: 300, requestTimeout: 300, connectionsCheckingInterval: 50 } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1')
  let answer = ''
  socket.on('data', (chunk) => { answer += chunk })
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
  const started = Date.now()
  await once(socket, 'close')
  t.ok(Date.now() - started < 3000, 'the connection is let go quickly')
  t.match(answer, /^HTTP\/1\.1 408 /)
  t.match(answer, /\{"error":408,"message":"Request timed out"\}$/)
})

t.test('the connection limits follow the settings', async (t) => {
  t.same(connectionOptions(loadConfig({ CONNECTION_TIMEOUT: '1000', MAX_HEADER_SIZE: '2048' })), {
    connectionTimeout: 1000,
    requestTimeout: 30000,
    keepAliveTimeout: 72000,
    http: { headersTimeout: 10000, maxHeaderSize: 2048 }
  })
})

t.test('a connection that stays silent is closed after the connection timeout', { timeout: 20_000 }, async (t) => {
  const { app } = await build(t, {}, { connectionTimeout: 300 })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  const started = Date.now()
  await once(socket, 'close')
  const waited = Date.now() - started
  t.ok(waited >= 250 && waited < 5000, `closed after ${waited} ms`)
})
