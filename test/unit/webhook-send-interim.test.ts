import { once } from 'node:events'
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { startReceiver } from '../helpers/receiver.js'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { EndpointSender, MAX_INTERIM_RESPONSES } from '../../plugins/webhooks/delivery/attempt.js'
import { startFlood } from '../helpers/flood-receiver.js'

const LOOPBACK = parseNetworks(['127.0.0.0/8'], 'test')
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' }
// Far above what the attempts below may take: ending at it would be the failure under test.
const TIMEOUT_MS = 10_000

function sender (t: Test, url: string, timeout = TIMEOUT_MS) {
  const sending = new EndpointSender(new URL(url), LOOPBACK, timeout, 4)
  t.teardown(() => sending.close())
  return sending
}

const waitFor = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setImmediate(resolve))
}

t.test('endless 100 Continue: an http_error long before the timeout, the connection dropped after a few bytes', async (t) => {
  const flood = await startFlood(t, 'HTTP/1.1 100 Continue\r\n\r\n'.repeat(160))
  const result = await sender(t, flood.url).send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 100 })
  t.ok(result.durationMs < TIMEOUT_MS / 4, `ended after ${Math.round(result.durationMs)} ms`)
  await waitFor(() => flood.state.closed === 1)
  t.ok(flood.state.written < 1024 * 1024, `the receiver wrote ${flood.state.written} bytes before the sender hung up`)
})

t.test('endless 103 Early Hints: cut off after a handful, as an http_error', async (t) => {
  const flood = await startFlood(t, 'HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n')
  const result = await sender(t, flood.url).send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 103, error: 'too many interim responses' })
  t.ok(result.durationMs < TIMEOUT_MS / 4, `ended after ${Math.round(result.durationMs)} ms`)
  await waitFor(() => flood.state.closed === 1)
  t.ok(flood.state.written < 1024 * 1024, `the receiver wrote ${flood.state.written} bytes before the sender hung up`)
})

t.test('fewer than a handful of interim answers, but past 64 KiB of them: an http_error', async (t) => {
  const hint = `HTTP/1.1 103 Early Hints\r\nlink: <${'a'.repeat(12_000)}>; rel=preload\r\n\r\n`
  const flood = await startFlood(t, (index) => index < 6 ? hint : index === 6 ? 'HTTP/1.1 204 No Content\r\n\r\n' : '')
  const result = await sender(t, flood.url).send(HEADERS, '{}')
  t.match(result, { outcome: 'http_error', status: 103, error: 'too many interim responses' })
})

t.test('a handful of interim answers before the final one is fine', async (t) => {
  const answer = (index: number) => index < MAX_INTERIM_RESPONSES
    ? 'HTTP/1.1 102 Processing\r\n\r\n'
    : index === MAX_INTERIM_RESPONSES ? 'HTTP/1.1 204 No Content\r\n\r\n' : ''
  const flood = await startFlood(t, answer)
  t.match(await sender(t, flood.url).send(HEADERS, '{}'), { outcome: 'success', status: 204 })
})

t.test('a receiver that trickles its answer a byte at a time: the attempt ends at the timeout', async (t) => {
  const answer = 'HTTP/1.1 200 OK\r\ncontent-length: 100000000\r\n\r\n' + 'x'.repeat(64)
  const flood = await startFlood(t, (index) => answer[index % answer.length])
  const result = await sender(t, flood.url, 500).send(HEADERS, '{}')
  t.match(result, { outcome: 'timeout', error: 'timeout' })
  t.ok(result.durationMs >= 490 && result.durationMs < 3000, `ended after ${Math.round(result.durationMs)} ms`)
  await waitFor(() => flood.state.closed === 1)
})

t.test('an attempt that times out while queued for a connection is never sent', async (t) => {
  const receiver = await startReceiver(t, () => {})
  const sending = new EndpointSender(new URL(receiver.url), LOOPBACK, 300, 1)
  t.teardown(() => sending.close())
  const holding = sending.send(HEADERS, '{"n":1}')
  const queued = sending.send(HEADERS, '{"n":2}')
  t.match(await holding, { outcome: 'timeout' })
  t.match(await queued, { outcome: 'timeout' })
  // The pool hands the timed-out request a connection once the first is cut: it must not be sent on it.
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(receiver.received.map(({ body }) => body), ['{"n":1}'], 'only the first request arrived')
})

t.test('an attempt whose deadline passes before it has a connection is never sent, its timer late or not', async (t) => {
  // On a stalled loop the connection can come before the attempt's overdue timer has run: the
  // deadline, not the timer, decides. Node runs due timers, then reads sockets in the order they
  // became ready: data written to a stalling socket before the attempt connects is read first,
  // and stalls the loop past the deadline before the connection is handed over.
  const TIMEOUT = 200
  const receiver = await startReceiver(t)
  const sending = new EndpointSender(new URL(receiver.url), LOOPBACK, TIMEOUT, 1)
  t.teardown(() => sending.close())
  let stallUntil = 0
  const staller = createNetServer((socket) => socket.on('data', () => { while (performance.now() < stallUntil); }))
  staller.listen(0, '127.0.0.1')
  await once(staller, 'listening')
  const trigger = connect((staller.address() as AddressInfo).port, '127.0.0.1')
  await once(trigger, 'connect')
  t.teardown(() => { trigger.destroy(); staller.close() })
  const attempt = await new Promise<ReturnType<typeof sending.send>>((resolve) => setTimeout(() => {
    trigger.write('stall')
    stallUntil = performance.now() + TIMEOUT + 100
    resolve(sending.send(HEADERS, '{"n":1}'))
  }, 10))
  t.match(await attempt, { outcome: 'timeout', error: 'timeout' })
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(receiver.received, [], 'nothing arrived')
})

t.test('an attempt aborted while queued for a connection is never sent', async (t) => {
  const receiver = await startReceiver(t, () => {})
  const sending = new EndpointSender(new URL(receiver.url), LOOPBACK, 500, 1)
  t.teardown(() => sending.close())
  const holding = sending.send(HEADERS, '{"n":1}')
  const queued = sending.send(HEADERS, '{"n":2}')
  await waitFor(() => receiver.received.length === 1)
  sending.abort()
  t.match(await queued, { outcome: 'network', error: 'aborted at shutdown' })
  t.match(await holding, { outcome: 'network', error: 'aborted at shutdown' }, 'the one in flight too')
  // The pool hands the aborted request a connection once the first is cut: it must not be sent on it.
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.same(receiver.received.map(({ body }) => body), ['{"n":1}'], 'only the first request arrived')
})
