/**
 * Node's own HTTP timers as the service sets them, in real time: HEADERS_TIMEOUT, REQUEST_TIMEOUT,
 * CONNECTION_TIMEOUT and KEEP_ALIVE_TIMEOUT each act no sooner than its setting, and long before
 * the 30 s check Node makes by default (service/app.ts sets connectionsCheckingInterval).
 */
import t from 'tap'
import { listening, settingsFrom, storedPlants, TOKEN } from '../../helpers/app.js'
import { exchange } from '../../helpers/exchange.js'

// The subtests are independent, and each waits on a timeout: they run at once, so that the
// shorter waits overlap the default HEADERS_TIMEOUT's 10 s.
t.jobs = 6

// Each timeout must act no sooner than its setting and long before the next mechanism that could
// close the connection (the 30 s to 72 s defaults): up to LATE after its setting, slack for a loaded machine.
const LATE = 8000
const actedAt = (waited: number, setting: number) => waited >= setting - 50 && waited < setting + LATE
const TIMED_OUT = /^HTTP\/1\.1 408 [^]*\r\n\r\n\{"error":408,"message":"Request timed out"\}$/

// First, so that the longest wait starts before the others.
t.test('the default HEADERS_TIMEOUT (10 s) acts within 18 s, not at Node\'s 30 s check', { timeout: 60_000 }, async (t) => {
  const { port } = await listening(t, {}, settingsFrom({}))
  const { answer, waited } = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(actedAt(waited, 10_000), `after ${waited} ms`)
})

t.test('HEADERS_TIMEOUT=1000: headers still incomplete after a second are answered 408 within a few seconds', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '1000' }))
  const { answer, waited } = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1\r\n')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(actedAt(waited, 1000), `after ${waited} ms`)
})

t.test('REQUEST_TIMEOUT=2000: a body still incomplete after two seconds is answered 408 within a few seconds, nothing stored', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '1000', REQUEST_TIMEOUT: '2000' }))
  const { answer, waited } = await exchange(port,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":1,"name":"`, 'a')
  t.match(answer, TIMED_OUT, 'a 408 in the Error shape')
  t.ok(actedAt(waited, 2000), `after ${waited} ms`)
  t.same(await storedPlants(store), [])
})

t.test('CONNECTION_TIMEOUT=1000: a request that has begun and then goes silent is answered 408, nothing stored', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ CONNECTION_TIMEOUT: '1000', HEADERS_TIMEOUT: '20000' }))
  const headers = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n')
  t.match(headers.answer, TIMED_OUT, 'headers begun: a 408 in the Error shape')
  t.ok(actedAt(headers.waited, 1000), `after ${headers.waited} ms`)
  const body = await exchange(port,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":1,`)
  t.match(body.answer, TIMED_OUT, 'body begun: a 408 in the Error shape')
  t.ok(actedAt(body.waited, 1000), `after ${body.waited} ms`)
  t.same(await storedPlants(store), [])
})

t.test('CONNECTION_TIMEOUT=1000: a silent connection is closed without a word', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ CONNECTION_TIMEOUT: '1000' }))
  const silent = await exchange(port, '')
  t.equal(silent.answer, '', 'nothing sent on a connection that said nothing')
  t.ok(actedAt(silent.waited, 1000), `closed after ${silent.waited} ms`)
})

t.test('KEEP_ALIVE_TIMEOUT=1000: a connection idle after its answer is closed without another word', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({ KEEP_ALIVE_TIMEOUT: '1000' }))
  const idle = await exchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  // Node keeps the connection a second longer than it tells the client, so that the client closes first.
  t.match(idle.answer, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/, 'only the answer to its request')
  t.ok(actedAt(idle.waited, 1000), `closed after ${idle.waited} ms`)
})
