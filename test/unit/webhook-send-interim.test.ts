import t, { type Test } from 'tap'
import { startReceiver } from '../helpers/receiver.js'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { EndpointSender, MAX_INTERIM_RESPONSES } from '../../plugins/webhooks/delivery/attempt.js'
import { startFlood } from '../helpers/flood-receiver.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { eventually } from '../helpers/webhooks.js'

const LOOPBACK = parseNetworks(['127.0.0.0/8'], 'test')
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' }
const TIMEOUT_MS = 10_000

/**
 * A sender on a clock of its own, which stands still unless the test moves it: an attempt that
 * ends without the clock moving ended long before its timeout, whatever the machine's load.
 */
function sender (t: Test, url: string, { timeout = TIMEOUT_MS, connections = 4 } = {}) {
  const clock = fakeClock()
  const sending = new EndpointSender(new URL(url), LOOPBACK, timeout, connections, clock)
  t.teardown(() => sending.close())
  return { sending, clock }
}

const waitFor = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setImmediate(resolve))
}

t.test('endless 100 Continue: an http_error long before the timeout, the connection dropped after a few bytes', async (t) => {
  const flood = await startFlood(t, 'HTTP/1.1 100 Continue\r\n\r\n'.repeat(160))
  const result = await sender(t, flood.url).sending.send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 100 })
  t.equal(result.durationMs, 0, 'ended with the clock standing still, short of the timeout')
  await waitFor(() => flood.state.closed === 1)
  t.ok(flood.state.written < 1024 * 1024, `the receiver wrote ${flood.state.written} bytes before the sender hung up`)
})

t.test('endless 103 Early Hints: cut off after a handful, as an http_error', async (t) => {
  const flood = await startFlood(t, 'HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n')
  const result = await sender(t, flood.url).sending.send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 103, error: 'too many interim responses' })
  t.equal(result.durationMs, 0, 'ended with the clock standing still, short of the timeout')
  await waitFor(() => flood.state.closed === 1)
  t.ok(flood.state.written < 1024 * 1024, `the receiver wrote ${flood.state.written} bytes before the sender hung up`)
})

t.test('fewer than a handful of interim answers, but past 64 KiB of them: an http_error', async (t) => {
  const hint = `HTTP/1.1 103 Early Hints\r\nlink: <${'a'.repeat(12_000)}>; rel=preload\r\n\r\n`
  const flood = await startFlood(t, (index) => index < 6 ? hint : index === 6 ? 'HTTP/1.1 204 No Content\r\n\r\n' : '')
  const result = await sender(t, flood.url).sending.send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 103, error: 'too many interim responses' })
})

t.test('a handful of interim answers before the final one is fine', async (t) => {
  const answer = (index: number) => index < MAX_INTERIM_RESPONSES
    ? 'HTTP/1.1 102 Processing\r\n\r\n'
    : index === MAX_INTERIM_RESPONSES ? 'HTTP/1.1 204 No Content\r\n\r\n' : ''
  const flood = await startFlood(t, answer)
  t.match(await sender(t, flood.url).sending.send(HEADERS, '{}'), { outcome: 'success', status: 204 })
})

t.test('a receiver that trickles its answer a byte at a time: the attempt ends at the timeout', async (t) => {
  const answer = 'HTTP/1.1 200 OK\r\ncontent-length: 100000000\r\n\r\n' + 'x'.repeat(64)
  const flood = await startFlood(t, (index) => answer[index % answer.length])
  const { sending, clock } = sender(t, flood.url, { timeout: 500 })
  const attempt = sending.send(HEADERS, '{}')
  t.ok(await eventually(() => flood.state.written > 0), 'the answer is trickling')
  await clock.advance(500)
  const result = await attempt
  t.match(result, { outcome: 'timeout', error: 'timeout' })
  t.equal(result.durationMs, 500, 'ended at the timeout')
  await waitFor(() => flood.state.closed === 1)
})

t.test('an attempt that times out while queued for a connection is never sent', async (t) => {
  // The first request is held unanswered; any later one is answered.
  const receiver = await startReceiver(t, (response, _received, index) => { if (index > 0) response.writeHead(204).end() })
  const { sending, clock } = sender(t, receiver.url, { timeout: 300, connections: 1 })
  const holding = sending.send(HEADERS, '{"n":1}')
  const queued = sending.send(HEADERS, '{"n":2}')
  t.ok(await eventually(() => receiver.received.length === 1), 'the first is sent, the second queued behind it')
  await clock.advance(300)
  t.match(await holding, { outcome: 'timeout' })
  t.match(await queued, { outcome: 'timeout' })
  // The pool hands the timed-out request a connection once the first is cut: it must not be sent
  // on it. A request queued after it is sent after it, on one connection at a time.
  t.match(await sending.send(HEADERS, '{"n":3}'), { outcome: 'success', status: 204 }, 'the next one is sent')
  t.same(receiver.received.map(({ body }) => body), ['{"n":1}', '{"n":3}'], 'the one that timed out while queued never arrived')
})

t.test('an attempt whose deadline passes before it has a connection is never sent, its timer late or not', async (t) => {
  // On a stalled loop the connection can come before the attempt's overdue timer has run: the
  // deadline, not the timer, decides. Here the clock is moved past the deadline without running
  // the timer, before the connection is made.
  const TIMEOUT = 200
  const receiver = await startReceiver(t, (response) => { response.writeHead(204).end() })
  const { sending, clock } = sender(t, receiver.url, { timeout: TIMEOUT, connections: 1 })
  const attempt = sending.send(HEADERS, '{"n":1}')
  clock.set(clock.now() + TIMEOUT)
  t.match(await attempt, { outcome: 'timeout', error: 'timeout' })
  t.equal(clock.pending(), 0, 'its timer cancelled, never run')
  t.match(await sending.send(HEADERS, '{"n":2}'), { outcome: 'success', status: 204 }, 'the next one is sent')
  t.same(receiver.received.map(({ body }) => body), ['{"n":2}'], 'nothing of the first arrived')
})

t.test('an attempt aborted while queued for a connection is never sent', async (t) => {
  const receiver = await startReceiver(t, () => {})
  const { sending } = sender(t, receiver.url, { timeout: 500, connections: 1 })
  const holding = sending.send(HEADERS, '{"n":1}')
  const queued = sending.send(HEADERS, '{"n":2}')
  await waitFor(() => receiver.received.length === 1)
  sending.abort()
  t.match(await queued, { outcome: 'network', error: 'aborted at shutdown' })
  t.match(await holding, { outcome: 'network', error: 'aborted at shutdown' }, 'the one in flight too')
  // Once the sender's connections are closed, whatever it sent on them has arrived.
  t.ok(await eventually(() => receiver.closed() === receiver.connections()), 'every connection closed')
  t.same(receiver.received.map(({ body }) => body), ['{"n":1}'], 'only the first request arrived')
})
