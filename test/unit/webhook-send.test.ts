import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { systemClock, type Clock } from '../../plugins/http/clock.js'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { BACKOFF_MS, jittered, nextWait, retryAfterMs } from '../../plugins/webhooks/delivery/schedule.js'
import { EndpointSender } from '../../plugins/webhooks/delivery/attempt.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually } from '../helpers/webhooks.js'

const LOOPBACK = parseNetworks(['127.0.0.0/8'], 'test')
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' }

function sender (t: Test, url: string, { timeout = 2000, allowed = LOOPBACK, clock = systemClock as Clock } = {}) {
  const sending = new EndpointSender(new URL(url), allowed, timeout, 4, clock)
  t.teardown(() => sending.close())
  return sending
}

t.test('a 2xx is a success; the body and headers arrive as given', async (t) => {
  const receiver = await startReceiver(t, (response) => { response.statusCode = 204; response.end() })
  const result = await sender(t, receiver.url).send(HEADERS, '{"id":9007199254740993}')
  t.match(result, { outcome: 'success', status: 204 })
  t.equal(receiver.received[0].body, '{"id":9007199254740993}')
  t.match(receiver.received[0].headers, { 'webhook-id': 'msg_1', 'content-type': 'application/json' })
})

t.test('410 is gone; 500 an http_error; a 503 keeps its Retry-After', async (t) => {
  const statuses = [410, 500, 503]
  const receiver = await startReceiver(t, (response, _received, index) => {
    response.statusCode = statuses[index]
    if (statuses[index] === 503) response.setHeader('retry-after', '120')
    response.end('x'.repeat(100_000))
  })
  const sending = sender(t, receiver.url)
  t.match(await sending.send(HEADERS, '{}'), { outcome: 'gone', status: 410 })
  t.match(await sending.send(HEADERS, '{}'), { outcome: 'http_error', status: 500 })
  t.match(await sending.send(HEADERS, '{}'), { outcome: 'http_error', status: 503, retryAfter: '120' })
})

t.test('a redirect is a failure: its target is never called', async (t) => {
  const target = await startReceiver(t)
  const receiver = await startReceiver(t, (response) => { response.writeHead(301, { location: target.url }).end() })
  t.match(await sender(t, receiver.url).send(HEADERS, '{}'), { outcome: 'http_error', status: 301 })
  await sleep(50)
  t.equal(target.connections(), 0, 'the Location was not followed')
})

t.test('a receiver that never answers: the attempt ends at the timeout, on the sender\'s clock', async (t) => {
  const receiver = await startReceiver(t, () => {})
  const clock = fakeClock()
  let ended = false
  const attempt = sender(t, receiver.url, { timeout: 300, clock }).send(HEADERS, '{}').finally(() => { ended = true })
  t.ok(await eventually(() => receiver.received.length === 1), 'the request arrived')
  await clock.advance(299)
  t.notOk(ended, 'a millisecond before the timeout: still waiting')
  await clock.advance(1)
  const result = await attempt
  t.match(result, { outcome: 'timeout' })
  t.equal(result.durationMs, 300, 'ended at the timeout')
})

t.test('https: a receiver that does not speak TLS is a network failure with its code', async (t) => {
  const plain = await startReceiver(t)
  const result = await sender(t, `https://127.0.0.1:${plain.port}/hook`).send(HEADERS, '{}')
  t.equal(result.outcome, 'network')
  t.match(result.error, /^[A-Z_]+$/, `an error code: ${result.error}`)
})

t.test('a refused connection is a network failure; an abort at shutdown ends an attempt at once', async (t) => {
  const closed = await startReceiver(t)
  closed.server.close()
  await sleep(10)
  t.match(await sender(t, closed.url).send(HEADERS, '{}'), { outcome: 'network', error: 'ECONNREFUSED' })
  const silent = await startReceiver(t, () => {})
  // Its timeout never comes: the clock stands still.
  const sending = sender(t, silent.url, { timeout: 5000, clock: fakeClock() })
  const attempt = sending.send(HEADERS, '{}')
  t.ok(await eventually(() => silent.received.length === 1), 'under way')
  sending.abort()
  t.match(await attempt, { outcome: 'network', error: 'aborted at shutdown' })
})

t.test('without the allow-list, loopback, link-local and private hosts are blocked: nothing reaches a listener', async (t) => {
  const receiver = await startReceiver(t)
  for (const host of ['127.0.0.1', 'localhost', '[::1]', '169.254.169.254', '10.0.0.1']) {
    const result = await sender(t, `http://${host}:${receiver.port}/hook`, { allowed: [] }).send(HEADERS, '{}')
    t.match(result, { outcome: 'blocked' }, `${host} blocked`)
  }
  t.equal(receiver.connections(), 0, 'the listener saw no connection')
})

t.test('the schedule: jitter within ±20 %, a dead letter after the last wait, back-off of 60 s at least', async (t) => {
  const schedule = [100, 1000, 5000]
  t.equal(jittered(1000, () => 0), 800)
  t.equal(jittered(1000, () => 1), 1200)
  const failed = (attempts: number, extra = {}) => ({ attempts, timedOut: false, ...extra })
  t.equal(nextWait(schedule, failed(1), 0, () => 0.5), 100)
  t.equal(nextWait(schedule, failed(3, { status: 500 }), 0, () => 0.5), 5000)
  t.equal(nextWait(schedule, failed(4, { status: 500 }), 0), undefined, 'the 4th failure of 3 waits is the last')
  for (const status of [429, 502, 503, 504]) t.equal(nextWait(schedule, failed(1, { status }), 0), BACKOFF_MS, `${status} backs off`)
  t.equal(nextWait(schedule, { attempts: 1, timedOut: true }, 0), BACKOFF_MS, 'a timeout backs off')
  t.equal(nextWait(schedule, failed(1, { status: 503, retryAfter: '300' }), 0), 300_000, 'Retry-After in seconds')
  t.equal(nextWait(schedule, failed(1, { status: 429, retryAfter: new Date(600_000).toUTCString() }), 0), 600_000, 'Retry-After as a date')
  t.equal(nextWait(schedule, failed(1, { status: 500, retryAfter: '300' }), 0, () => 0.5), 100, 'only a slow-down status is held to it')
  t.equal(retryAfterMs('9999999', 0), 86_400_000, 'at most a day')
  t.equal(retryAfterMs('soon', 0), undefined)
  t.equal(retryAfterMs(new Date(0).toUTCString(), 5000), 0, 'a date past is now')
  t.equal(retryAfterMs(undefined, 0), undefined)
})
