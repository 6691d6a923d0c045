import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { AUTH, build, createPlant, JSON_TYPE, type App } from '../helpers/app.js'
import { startReceiver } from '../helpers/receiver.js'
import { median } from '../helpers/time.js'
import { eventually, newSecret, verifyDelivery, watchedMemoryStore, webhooksFor } from '../helpers/webhooks.js'
import { parseExactJson } from '../../schemas/exact-json.js'

const INT64_MAX = 2n ** 63n - 1n
const INT64_MIN = -(2n ** 63n)

const admin = async (app: App, method: 'GET' | 'POST', url: string, payload?: object) => {
  const reply = await app.inject({ method, url, headers: { ...AUTH, ...(payload && JSON_TYPE) }, ...(payload && { payload: JSON.stringify(payload) }) })
  return { status: reply.statusCode, text: reply.body, body: reply.body === '' ? undefined : parseExactJson(reply.body) as any }
}

/**
 * The first event's deliveries once `done` holds for them, read through the admin route until it
 * does or `ms` pass (generous: a loaded machine slows the worker, not what it does): the last read.
 */
async function deliveriesWhen (app: App, done: (deliveries: any[]) => boolean, ms = 20_000): Promise<any[]> {
  const end = Date.now() + ms
  for (;;) {
    const deliveries = (await admin(app, 'GET', '/webhooks/events')).body[0]?.deliveries ?? []
    if (done(deliveries) || Date.now() > end) return deliveries
    await sleep(20)
  }
}

/**
 * The events, once `done` holds for every delivery of each of `count` (read through the admin
 * route, 20 s at most): whether it did.
 */
async function eventsWhen (app: App, count: number, done: (delivery: any) => boolean): Promise<boolean> {
  return await eventually(async () => {
    const events = (await admin(app, 'GET', `/webhooks/events?limit=${count}`)).body
    return events.length === count && events.every(({ deliveries }: { deliveries: any[] }) => deliveries.every(done))
  })
}
const delivered = (delivery: any) => delivery.state === 'delivered'
// An attempt's timeout far beyond what a loaded machine stalls (a timed-out attempt is tried again
// only after 60 s): each answer counts as it came, and each delivery is finished once answered.
const PATIENT = { timeout: 30_000 }

// What no longer happens is shown without waiting for it: once every delivery is finished (its
// result written, so that none is due again), the app is closed, which lets its attempts in flight
// end; what the receiver has then is all it will ever get.

// The subtests are independent (each its own app, store and receivers) and mostly wait: several at a time.
t.jobs = 8

t.test('each create is POSTed once, signed so that standardwebhooks and svix verify it, the body exact', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t)
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }], PATIENT) })
  const ids = [2n ** 53n + 1n, INT64_MAX, INT64_MIN]
  for (const id of ids) t.equal((await createPlant(app, `{"id":${id},"name":"fern ${id}","tag":"green"}`)).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 3), 'three deliveries')
  t.ok(await eventsWhen(app, 3, delivered), 'each recorded as delivered')
  await app.close()
  t.equal(receiver.received.length, 3, 'and no more')
  const messageIds = new Set<string>()
  for (const [index, { headers, body }] of receiver.received.entries()) {
    t.doesNotThrow(() => verifyDelivery(secret, headers, body), `delivery ${index + 1} verifies with both libraries`)
    messageIds.add(String(headers['webhook-id']))
    const event = parseExactJson(body) as Record<string, unknown>
    const id = ids.find((candidate) => candidate === event.id)
    t.ok(id !== undefined, `the id is exact: ${String(event.id)}`)
    t.match(body, new RegExp(`^\\{"type":"plant\\.created","timestamp":"[0-9T:.Z-]+","id":${id},"name":"fern ${id}","tag":"green"\\}$`))
  }
  t.equal(messageIds.size, 3, 'one webhook-id per event')
})

t.test('a 409, a 400 and a delete of nothing produce no event; a delete sends plant.deleted where subscribed', async (t) => {
  const [created, deleted] = [await startReceiver(t), await startReceiver(t)]
  const secret = newSecret()
  const { app } = await build(t, {
    webhooks: webhooksFor([{ url: created.url, secret }, { url: deleted.url, secret, events: ['plant.deleted'] }], PATIENT)
  })
  t.equal((await createPlant(app, '{"id":1,"name":"a"}')).statusCode, 200)
  t.equal((await createPlant(app, '{"id":1,"name":"b"}')).statusCode, 409)
  t.equal((await createPlant(app, '{"id":"x","name":"b"}')).statusCode, 400)
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/2', headers: AUTH })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })).statusCode, 204)
  t.ok(await eventually(() => created.received.length === 1 && deleted.received.length === 1))
  t.ok(await eventsWhen(app, 2, delivered), 'both recorded as delivered')
  const events = await admin(app, 'GET', '/webhooks/events')
  t.same(events.body.map(({ type }: { type: string }) => type), ['plant.created', 'plant.deleted'], 'two events stored')
  await app.close()
  t.equal(created.received.length, 1, 'plant.created once: not for the 409, nor the 400')
  t.equal(deleted.received.length, 1, 'plant.deleted once: not for the delete of nothing')
  t.match(deleted.received[0].body, /^\{"type":"plant\.deleted","timestamp":"[^"]+","id":1\}$/)
})

t.test('a burst of 150 events, more than an endpoint\'s 64 slots: each reaches the receiver once', async (t) => {
  const receiver = await startReceiver(t)
  const { store, outbox } = watchedMemoryStore()
  const { app } = await build(t, { store, webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }], PATIENT) })
  // In one burst: the worker's first claim finds more due than the endpoint has slots.
  await Promise.all(Array.from({ length: 150 }, (_, index) => createPlant(app, `{"id":${index + 1},"name":"a"}`)))
  t.ok(await eventually(() => receiver.received.length >= 150, 10_000), `${receiver.received.length} deliveries`)
  const successes = () => outbox().records.filter(({ outcome }) => outcome === 'success').length
  t.ok(await eventually(() => successes() === 150), 'each recorded as delivered')
  await app.close()
  t.equal(new Set(receiver.received.map(({ headers }) => headers['webhook-id'])).size, 150, '150 distinct events')
  t.equal(receiver.received.length, 150, 'each once')
})

t.test('500 then 200: attempts at the scheduled gaps, then none', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t, (response, _received, index) => { response.statusCode = index < 2 ? 500 : 200; response.end() })
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }], { ...PATIENT, retrySchedule: [150, 300, 450] }) })
  const created = Date.now()
  t.equal((await createPlant(app, '{"id":5,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 3, 20_000), 'three attempts')
  t.ok(await eventsWhen(app, 1, delivered), 'recorded as delivered')
  const { body: [event] } = await admin(app, 'GET', '/webhooks/events')
  await app.close()
  t.equal(receiver.received.length, 3, 'none after the success')
  const [first, second, third] = receiver.received.map(({ at }) => at)
  // Never before the schedule's wait, -20 % at the soonest. (The waits to the millisecond are
  // checked on an injected clock, in unit/webhook-worker-clock.)
  t.ok(second - first >= 120, `first gap ${second - first} ms (schedule 150)`)
  t.ok(third - second >= 240, `second gap ${third - second} ms (schedule 300)`)
  const ids = new Set(receiver.received.map(({ headers }) => headers['webhook-id']))
  t.equal(ids.size, 1, 'the same webhook-id on every attempt')
  // Signed at its own attempt: not before the attempt before it arrived (the create, for the first), nor after it arrived itself.
  const stamps = receiver.received.map(({ headers }) => Number(headers['webhook-timestamp']) * 1000)
  const since = [created, first, second]
  t.ok(stamps.every((stamp, index) => stamp >= Math.floor(since[index] / 1000) * 1000 && stamp <= receiver.received[index].at), 'each attempt signs its own time')
  for (const { headers, body } of receiver.received) t.doesNotThrow(() => verifyDelivery(secret, headers, body))
  t.match(event.deliveries[0], { endpoint: 'e0', state: 'delivered', attempts: 3 })
  t.same(event.deliveries[0].history.map(({ outcome, status }: { outcome: string, status: number }) => [outcome, status]),
    [['http_error', 500], ['http_error', 500], ['success', 200]])
})

t.test('always 500: a dead letter after the last attempt, listed, redelivered once by hand with the same webhook-id', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t, (response) => { response.statusCode = 500; response.end() })
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }], { retrySchedule: [100, 100] }) })
  t.equal((await createPlant(app, '{"id":6,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 3), '3 attempts: the first and one per wait')
  const [failed] = await deliveriesWhen(app, ([delivery]) => delivery?.state === 'failed')
  t.match(failed, { state: 'failed', attempts: 3 }, 'a dead letter')
  const { body: [event] } = await admin(app, 'GET', '/webhooks/events')
  const endpoints = await admin(app, 'GET', '/webhooks/endpoints')
  t.match(endpoints.body, [{ name: 'e0', host: `127.0.0.1:${receiver.port}`, enabled: true, failed: 1, pending: 0 }])
  t.notMatch(endpoints.text, /whsec_|\/hook/, 'no secret, and of the URL only its host')
  // A dead letter is never due again: only a redelivery sends it (counted once the app is closed).
  t.equal(receiver.received.length, 3, 'no attempt after the last')
  const redelivered = await admin(app, 'POST', `/webhooks/events/${event.seq}/redeliver`, {})
  t.match(redelivered, { status: 202, body: { redelivered: 1 } })
  t.ok(await eventually(() => receiver.received.length === 4), 'sent again')
  const [again] = await deliveriesWhen(app, ([delivery]) => delivery?.state === 'failed' && delivery.history.length === 4)
  t.match(again, { state: 'failed', attempts: 3 }, 'one attempt more (counted as the last of the schedule), failed again: a dead letter again')
  t.equal(receiver.received[3].headers['webhook-id'], receiver.received[0].headers['webhook-id'], 'with the same webhook-id')
  t.equal((await admin(app, 'POST', '/webhooks/events/999/redeliver', {})).status, 404)
  t.equal((await admin(app, 'GET', '/webhooks/events/999')).status, 404)
  t.match((await admin(app, 'GET', `/webhooks/events/${event.seq}`)).body.deliveries[0], { state: 'failed' })
  await app.close()
  t.equal(receiver.received.length, 4, 'once, and none after the first dead letter either')
})

t.test('410: one attempt, the endpoint disabled and later events not sent to it until it is enabled again', async (t) => {
  const secret = newSecret()
  let gone = true
  const receiver = await startReceiver(t, (response) => { response.statusCode = gone ? 410 : 200; response.end() })
  const { store, outbox } = watchedMemoryStore()
  const { app } = await build(t, { store, webhooks: webhooksFor([{ url: receiver.url, secret }]) })
  t.equal((await createPlant(app, '{"id":7,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1))
  // Disabled a moment after the 410 arrived (longer on a loaded machine): the next event comes after.
  for (let tries = 0; tries < 500 && (await admin(app, 'GET', '/webhooks/endpoints')).body[0].enabled; tries++) await sleep(10)
  t.equal((await createPlant(app, '{"id":8,"name":"b"}')).statusCode, 200)
  // A claim begun after the create (its wake-up's, or at the latest the next poll's) sees its delivery, and hands out nothing.
  const begun = outbox().claimsStarted()
  t.ok(await eventually(() => outbox().claims.length > begun), 'a claim made since')
  t.same(outbox().claims.slice(begun), outbox().claims.slice(begun).map(() => []), 'nothing claimed for the disabled endpoint')
  t.equal(receiver.received.length, 1, 'one attempt in all')
  t.match((await admin(app, 'GET', '/webhooks/endpoints')).body, [{ name: 'e0', enabled: false, disabledReason: /410/, pending: 2 }])
  t.match((await app.inject({ url: '/metrics' })).body, /plant_store_webhook_endpoint_enabled\{endpoint="e0"\} 0\b/)
  gone = false
  t.match(await admin(app, 'POST', '/webhooks/endpoints/e0/enable'), { status: 200, body: { name: 'e0', enabled: true } })
  t.ok(await eventually(() => receiver.received.length === 3), 'both events sent once enabled again')
  t.equal((await admin(app, 'POST', '/webhooks/endpoints/nope/enable')).status, 404)
})

t.test('a 503 with Retry-After: the next attempt waits at least 60 s, and the Retry-After when longer', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t, (response, _received, index) => {
    response.writeHead(index === 0 ? 503 : 429, index === 0 ? {} : { 'retry-after': '600' }).end()
  })
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }, { name: 'slow', url: receiver.url, secret }]) })
  t.equal((await createPlant(app, '{"id":9,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 2))
  const deliveries = await deliveriesWhen(app, (deliveries) => deliveries.length === 2 && deliveries.every((delivery) => delivery.history.length === 1))
  // Due that long after the attempt's end, as the worker's clock tells both (the schedule's 200 ms, jittered, is shorter).
  const waits = deliveries.map((delivery) => Date.parse(delivery.dueAt) - Date.parse(delivery.history[0].at)).sort((a, b) => a - b)
  t.same(waits, [60_000, 600_000], 'a 503 without Retry-After: 60 s; a 429 with Retry-After: 600: 600 s')
})

t.test('a receiver that never answers delays neither another endpoint nor the creates', async (t) => {
  const secret = newSecret()
  const silent = await startReceiver(t, () => {})
  const healthy = await startReceiver(t)
  const { app } = await build(t, { webhooks: webhooksFor([{ url: silent.url, secret }, { url: healthy.url, secret }], { timeout: 10_000, drainTimeout: 100 }) })
  const warnings: Error[] = []
  const onWarning = (warning: Error) => warnings.push(warning)
  process.on('warning', onWarning)
  t.teardown(() => process.off('warning', onWarning))
  const latencies: number[] = []
  for (let id = 1; id <= 40; id++) {
    const start = performance.now()
    t.equal((await createPlant(app, `{"id":${id},"name":"a"}`)).statusCode, 200)
    latencies.push(performance.now() - start)
    // Held behind the silent endpoint, it would wait for that attempt's timeout (10 s).
    const arrived = await eventually(() => healthy.received.length === id, 5000)
    if (!arrived) t.fail(`event ${id} did not reach the healthy endpoint within 5 s`)
  }
  t.pass('each event reached the healthy endpoint well within the silent one\'s timeout')
  t.ok(median(latencies) < 2000, `create latency median ${median(latencies).toFixed(1)} ms, far below that timeout`)
  t.ok(silent.received.length >= 16, `the silent endpoint holds ${silent.received.length} attempts open`)
  t.same(warnings.map(({ name }) => name), [], 'no process warning (16 attempts in flight listen to one abort signal)')
})

t.test('metrics: events by type equal plants created; attempts by endpoint and outcome; pending and enabled', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t)
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }]) })
  for (let id = 1; id <= 3; id++) await createPlant(app, `{"id":${id},"name":"a"}`)
  t.ok(await eventually(() => receiver.received.length === 3))
  // The results are written a moment after the receiver answered (longer on a loaded machine); the
  // first scrape's reading of the outbox is kept for 10 s, so it comes once they are.
  for (let tries = 0; tries < 500; tries++) {
    const events = (await admin(app, 'GET', '/webhooks/events')).body
    if (events.every(({ deliveries }: { deliveries: any[] }) => deliveries[0].state === 'delivered')) break
    await sleep(10)
  }
  const text = (await app.inject({ url: '/metrics' })).body
  t.match(text, /plant_store_plants_created_total 3\b/)
  t.match(text, /plant_store_webhook_events_total\{type="plant\.created"\} 3\b/)
  t.match(text, /plant_store_webhook_attempts_total\{endpoint="e0",outcome="success"\} 3\b/)
  t.match(text, /plant_store_webhook_attempt_duration_seconds_count\{endpoint="e0"\} 3\b/)
  t.match(text, /plant_store_webhook_pending\{endpoint="e0"\} 0\b/)
  t.match(text, /plant_store_webhook_oldest_pending_seconds\{endpoint="e0"\} 0\b/)
  t.match(text, /plant_store_webhook_dead_letters\{endpoint="e0"\} 0\b/)
  t.match(text, /plant_store_webhook_endpoint_enabled\{endpoint="e0"\} 1\b/)
  t.notMatch(text, /whsec_/)
})

t.test('closing: an attempt in flight finishes within drainTimeout; one cut off is handed back, not counted', async (t) => {
  const secret = newSecret()
  const dir = t.testdir({})
  // The two cases side by side: each waits for its delivery thread to start.
  t.jobs = 2
  // Answered while the app closes (a moment after it begins to), or not before the attempt's 15 s
  // timeout: a close that ignored drainTimeout would wait for that timeout, and the attempt would
  // then count, as a timeout.
  for (const [drainTimeout, answered, expected] of [[2000, true, { state: 'delivered', attempts: 1 }], [100, false, { state: 'pending', attempts: 0 }]] as const) {
    t.test(`drainTimeout ${drainTimeout}`, async (t) => {
      const file = `sqlite:${dir}/drain-${drainTimeout}.db`
      const held: ServerResponse[] = []
      const slow = await startReceiver(t, (response) => { held.push(response) })
      const webhooks = webhooksFor([{ url: slow.url, secret }], { drainTimeout, timeout: 15_000 })
      const { app } = await build(t, { store: file, webhooks })
      await createPlant(app, '{"id":1,"name":"a"}')
      t.ok(await eventually(() => slow.received.length === 1))
      const closing = app.close()
      // The delivery thread is told to stop within a moment of the close's start.
      if (answered) setTimeout(() => held[0].end(), 50)
      await closing
      // Looked at again with another endpoint configured and no delivery, so that e0's delivery is not claimed meanwhile.
      const { app: again } = await build(t, { store: file, webhooks: { ...webhooksFor([{ name: 'viewer', url: 'http://127.0.0.1:9/', secret }]), delivery: 'off' } })
      t.same((await admin(again, 'GET', '/webhooks/endpoints')).body.map(({ name }: { name: string }) => name), ['viewer'],
        'an endpoint no longer configured is not listed (its deliveries stay in the store)')
      const { body: [event] } = await admin(again, 'GET', '/webhooks/events')
      t.match(event.deliveries[0], expected, `drainTimeout ${drainTimeout}, ${answered ? 'answered as it closed' : 'not answered'}: ${JSON.stringify(expected)}`)
      t.same(event.deliveries[0].history.length, expected.attempts, 'an attempt cut off is not in the history')
      await again.close()
    })
  }
})

t.test('an endpoint with no success for disableAfter is disabled, saying since when', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t, (response) => { response.statusCode = 500; response.end() })
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret }], { retrySchedule: Array(20).fill(100), disableAfter: 400 }) })
  t.equal((await createPlant(app, '{"id":1,"name":"a"}')).statusCode, 200)
  let endpoint: any
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(50)) {
    [endpoint] = (await admin(app, 'GET', '/webhooks/endpoints')).body
    if (!endpoint.enabled) break
  }
  t.match(endpoint, { enabled: false, disabledReason: /^no successful delivery since \d{4}-/, pending: 1 })
  const attempts = receiver.received.length
  t.ok(attempts >= 2 && attempts < 20, `${attempts} attempts before it was disabled`)
  // A disabled endpoint's delivery is claimed by no poll: the app closed, nothing more came.
  await app.close()
  t.equal(receiver.received.length, attempts, 'none after')
})

t.test('SSRF: an endpoint on loopback without the allow-list is blocked; nothing reaches the listener', async (t) => {
  const secret = newSecret()
  const receiver = await startReceiver(t)
  // One attempt each: no retry before the metrics are read, however slow the machine.
  const webhooks = webhooksFor([{ url: receiver.url, secret }, { url: `http://localhost:${receiver.port}/hook`, secret }], { allowedNetworks: [], retrySchedule: [3_600_000] })
  const { app } = await build(t, { webhooks })
  t.equal((await createPlant(app, '{"id":1,"name":"a"}')).statusCode, 200)
  const deliveries = await deliveriesWhen(app, (deliveries) => deliveries.length === 2 && deliveries.every(({ history }) => history.length > 0))
  t.same(deliveries.map(({ history }) => history[0]?.outcome), ['blocked', 'blocked'])
  t.equal(receiver.connections(), 0, 'the listener saw no connection')
  t.match((await app.inject({ url: '/metrics' })).body, /plant_store_webhook_attempts_total\{endpoint="e0",outcome="blocked"\} 1\b/)
})

t.test('a store of the host\'s own without an outbox: the webhooks option is refused at registration', async (t) => {
  const { createMemoryStore } = await import('../../plugins/store/memory/store.js')
  const { openOutbox, ...withoutOutbox } = createMemoryStore()
  t.ok(openOutbox)
  await t.rejects(build(t, { store: withoutOutbox, webhooks: webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }]) }),
    /option webhooks needs a store that keeps an outbox/)
})

t.test('admin routes need the token, and refuse a bad seq', async (t) => {
  const { app } = await build(t, { webhooks: webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }]) })
  t.equal((await app.inject({ url: '/webhooks/events' })).statusCode, 401)
  t.equal((await app.inject({ url: '/webhooks/endpoints' })).statusCode, 401)
  t.equal((await admin(app, 'GET', '/webhooks/events/x')).status, 400)
  t.same((await admin(app, 'GET', '/webhooks/events?limit=2&after=0')).body, [])
})

t.test('with the host\'s authentication, the admin routes are guarded by it too', async (t) => {
  const { app } = await build(t, {
    tokens: undefined,
    authenticate: (request) => request.headers['x-user'] === 'ops' ? 'ops' : false,
    openapi: {},
    webhooks: webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }])
  })
  t.equal((await app.inject({ url: '/webhooks/endpoints' })).statusCode, 401)
  const reply = await app.inject({ url: '/webhooks/endpoints', headers: { 'x-user': 'ops' } })
  t.equal(reply.statusCode, 200)
  t.match(reply.json(), [{ name: 'e0', enabled: true }])
})
