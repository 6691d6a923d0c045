import { once } from 'node:events'
import { get } from 'node:http'
import { connect, createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { loadConfig, metricsAddress } from '../../service/config/index.js'
import { METHOD_NOT_ALLOWED } from '../../plugins/http/method-not-allowed.js'
import { build } from '../helpers/app.js'
import { assertStopsCleanly, exitWithin, linesOf, spawnServer, startServer } from '../helpers/server-process.js'

// The subtests are independent; those that start a server process overlap their start-ups.
t.jobs = 8

const TOKEN = 'test-token-metrics-listener'
const LISTENING = /^Metrics listening at (http:\/\/127\.0\.0\.1:\d+)$/
const notFound = { error: 404, message: 'Route not found' }

/** GET on a connection of its own: no pooled keep-alive connection that the server may just be closing. */
function getFresh (url: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
      response.on('end', () => resolve({ status: response.statusCode!, body }))
    }).on('error', reject)
  })
}

/**
 * Sends a create's headers with Expect: 100-continue and resolves once the server answered 100
 * (it has taken the request in); `finish` sends the body and resolves with the whole answer.
 */
async function createInFlight (url: string, body: string) {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  const closed = once(socket, 'close')
  socket.write(`POST /plants HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
  while (!answer.includes('100 Continue')) await once(socket, 'data')
  return {
    async finish () {
      socket.write(body)
      await closed
      return answer
    }
  }
}

/** Whether a TCP connection to `url` is refused (nothing listens there). */
function refused (url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname)
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(true))
  })
}

t.test('METRICS_HOST, METRICS_PORT and DOCS: defaults as before, bad values refused naming the variable', async (t) => {
  t.match(loadConfig({}), { DOCS: 'on' })
  t.equal(metricsAddress(loadConfig({})), undefined, 'by default /metrics is on PORT')
  t.same(metricsAddress(loadConfig({ METRICS_PORT: '9464' })), { host: '127.0.0.1', port: 9464 }, 'on loopback by default')
  t.same(metricsAddress(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '::1' })), { host: '::1', port: 0 })
  for (const [env, line] of [
    [{ METRICS_PORT: '70000' }, /^Invalid configuration: METRICS_PORT must be <= 65535; set METRICS_PORT to the TCP port of a listener of its own for \/metrics/],
    [{ METRICS_PORT: 'nine' }, /^Invalid configuration: METRICS_PORT must be integer; set METRICS_PORT to /],
    [{ METRICS_PORT: '3000' }, /^Invalid configuration: METRICS_PORT \(3000\) is PORT's port; set METRICS_PORT to another port, or remove it/],
    [{ METRICS_HOST: '0.0.0.0' }, /^Invalid configuration: METRICS_HOST is set without METRICS_PORT, so nothing would listen there; set METRICS_PORT too/],
    [{ METRICS_HOST: 'not a host', METRICS_PORT: '9464' }, /^Invalid configuration: METRICS_HOST must match format "hostname"; set METRICS_HOST to the address the metrics listener/],
    [{ DOCS: 'maybe' }, /^Invalid configuration: DOCS must be equal to one of the allowed values; set DOCS to on or off: whether \/documentation/]
  ] as const) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', message: line }, JSON.stringify(env))
  }
})

t.test('a bad METRICS_PORT stops the service at once with one line', async (t) => {
  const server = spawnServer(t, { API_TOKENS: TOKEN, PORT: '3000', METRICS_PORT: '3000' })
  t.same(await exitWithin(server, 30_000), { code: 1, signal: null })
  t.match(linesOf(server.stderr()), [/^Invalid configuration: METRICS_PORT \(3000\) is PORT's port/])
  t.equal(linesOf(server.stderr()).length, 1)
})

t.test('a METRICS_PORT in use stops the service with one line that names it', async (t) => {
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => taken.close())
  const { port } = taken.address() as AddressInfo
  const server = spawnServer(t, { API_TOKENS: TOKEN, METRICS_PORT: String(port) })
  t.same(await exitWithin(server, 30_000), { code: 1, signal: null })
  t.match(linesOf(server.stderr()), [/^Cannot start: the metrics listener \(METRICS_HOST, METRICS_PORT\): listen EADDRINUSE/])
})

t.test('the app built with a metrics listener: /metrics there, with the app\'s requests, and not on the app', async (t) => {
  const { app } = await build(t, {}, { metricsListener: true })
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
  t.same((await app.inject({ url: '/metrics' })).json(), notFound)
  const listener = app.metricsListener!
  const scrape = await listener.inject({ url: '/metrics' })
  t.equal(scrape.statusCode, 200)
  t.match(scrape.body, /http_request_duration_seconds_count\{method="GET",route="\/healthz",status_code="200"\} 1/)
  t.equal(scrape.headers['x-content-type-options'], 'nosniff', 'the security headers')
  t.same((await listener.inject({ url: '/plants' })).json(), notFound)
  t.equal((await listener.inject({ method: 'OPTIONS', url: '/metrics' })).headers.allow, 'GET, HEAD')
  t.equal((await build(t)).app.metricsListener, null, 'none by default')
})

t.test('DOCS=off: no documentation routes; the API is unchanged', async (t) => {
  const { app } = await build(t, {}, { docs: false })
  for (const url of ['/documentation', '/documentation/json', '/documentation/static/index.html']) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 404, url)
    t.same(response.json(), notFound)
  }
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200)
  t.equal((await app.inject({ url: '/metrics' })).statusCode, 200, '/metrics stays where it was')
})

t.test('with METRICS_PORT, /metrics is served there and not on PORT; it answers until the API has drained', async (t) => {
  // A long grace period: the exit must come from everything closing, not from the timeout.
  const server = await startServer(t, { API_TOKENS: TOKEN, METRICS_PORT: '0', SHUTDOWN_TIMEOUT: '60000', DOCS: 'off' })
  const line = await server.waitForLog((candidate) => LISTENING.test(candidate.msg ?? ''), 1000)
  const metricsUrl = LISTENING.exec(line.msg!)![1]
  t.not(metricsUrl, server.url, 'a port of its own')

  const scrape = await fetch(`${metricsUrl}/metrics`)
  t.equal(scrape.status, 200)
  t.match(scrape.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  t.match(await scrape.text(), /# TYPE http_request_duration_seconds histogram/)
  t.match((await getFresh(`${metricsUrl}/metrics`)).body, /# TYPE http_request_duration_seconds histogram/)
  const onApi = await fetch(`${server.url}/metrics`)
  t.equal(onApi.status, 404, 'not on the public port')
  t.same(await onApi.json(), notFound)
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'the probes stay on the public port')
  t.same(await (await fetch(`${metricsUrl}/healthz`)).json(), notFound, 'and only there')
  t.equal((await fetch(`${server.url}/documentation/json`)).status, 404, 'DOCS=off')
  const put = await fetch(`${metricsUrl}/metrics`, { method: 'PUT' })
  t.equal(put.status, 405)
  t.equal(put.headers.get('allow'), 'GET, HEAD')
  t.same(await put.json(), { error: 405, message: METHOD_NOT_ALLOWED })

  // A create in flight through the shutdown: taken in now, its body sent later.
  const request = await createInFlight(server.url, '{"id":7,"name":"sent while the service shuts down"}')
  server.child.kill('SIGTERM')
  await server.waitForLog((candidate) => /shutting down/.test(candidate.msg ?? ''), 10_000)
  const during = await getFresh(`${metricsUrl}/metrics`)
  t.equal(during.status, 200, 'metrics are scraped while a request is in flight')
  t.match(during.body, /http_request_duration_seconds_count\{method="GET",route="\/healthz",status_code="200"\} 1/)
  t.match(await request.finish(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/, 'the request in flight is answered')
  assertStopsCleanly(t, server, await exitWithin(server, 30_000), 'then both listeners close and the process exits 0')
  t.ok(await refused(metricsUrl), 'nothing listens on the metrics port any more')
})
