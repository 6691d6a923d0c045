/**
 * How the delivery worker claims: a fast endpoint's backlog ahead of its free slots, results written
 * in batches. A delivery claimed ahead never waits past the slack its lease leaves, a burst of
 * results is written at once, a wake-up during a claim is not lost, and a silent endpoint holds
 * up no other. Each worker is on a fake clock: its polls, claim gaps and batches come when the
 * test moves it.
 */
import type { ServerResponse } from 'node:http'
import t from 'tap'
import type { WebhookOutbox } from '../../plugins/store/outbox.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { FLUSH_DELAY_MS } from '../../plugins/webhooks/delivery/results.js'
import { DEFAULT_CLAIM_GAP_MS, DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { eventPayloads as payloads } from '../../plugins/webhooks/events.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, watchedOutbox, webhooksFor } from '../helpers/webhooks.js'

const quiet = { warn () {} }
const HOUR = 3_600_000
// Fake clocks that start at the real time: the memory store dates its events by the real clock, and
// a worker prunes the finished ones older than the retention by its own.
const nowClock = () => fakeClock(Date.now())
const ENDPOINTS = [{ name: 'e0', events: ['plant.created' as const] }]

/** Waits until the outbox's deliveries (one endpoint) have `states`, up to 20 s; `meanwhile` runs before each look. */
async function statesBecome (outbox: WebhookOutbox, states: string[], meanwhile: () => unknown = () => {}): Promise<boolean> {
  return await eventually(async () => {
    await meanwhile()
    const events = await outbox.events({ limit: states.length + 1 })
    return events.map(({ deliveries }) => deliveries[0].state).join() === states.join()
  })
}

t.test('deliveries claimed ahead that waited past half the timeout are handed back: another instance sends them, none twice', async (t) => {
  const held: ServerResponse[] = []
  let holding = false
  const first = await startReceiver(t, (response) => {
    if (holding) held.push(response)
    else response.writeHead(204).end()
  })
  const other = await startReceiver(t)
  const store = createMemoryStore()
  const secret = newSecret()
  const configOf = (url: string) => resolveWebhooks(webhooksFor([{ name: 'e0', url, secret }], { timeout: 1000 }))
  const outbox = await store.openOutbox({ endpoints: ENDPOINTS, payloads })
  // One slot, no polling: it claims when woken.
  const clock = nowClock()
  let settled = 0
  const ahead = new DeliveryWorker({ outbox, config: configOf(first.url), log: quiet, clock, concurrency: 1, pollMs: HOUR, onAttempt: () => settled++ })
  t.teardown(() => ahead.stop(0))
  await store.create({ id: 1n, name: 'a' })
  ahead.start()
  t.ok(await eventually(() => settled === 1), 'the first event is sent at once')
  await clock.advance(FLUSH_DELAY_MS)
  t.ok(await statesBecome(outbox, ['delivered']), 'and recorded')

  // Its endpoint answered fast: the next claim takes more than its one slot.
  holding = true
  for (let id = 2n; id <= 5n; id++) await store.create({ id, name: 'a' })
  ahead.wake()
  await clock.advance(DEFAULT_CLAIM_GAP_MS)
  t.ok(await eventually(() => first.received.length === 2), 'one sent, held by the receiver; three wait in the worker')
  // Past half the timeout (500 ms) since they were claimed.
  await clock.advance(600)
  // Another instance, which finds nothing due until they are handed back.
  const otherClock = nowClock()
  const instance = new DeliveryWorker({ outbox, config: configOf(other.url), log: quiet, clock: otherClock, pollMs: 50 })
  t.teardown(() => instance.stop(0))
  instance.start()
  held.shift()!.writeHead(204).end()
  t.ok(await eventually(() => settled === 2), 'the held one answered')
  await clock.advance(FLUSH_DELAY_MS)
  t.ok(await eventually(async () => {
    await otherClock.advance(50)
    return other.received.length === 3
  }), `the three waiting are sent by the other instance at its polls (${other.received.length})`)
  const ids = [...first.received, ...other.received].map(({ headers }) => headers['webhook-id'])
  t.equal(new Set(ids).size, 5, 'each event sent once')
  t.equal(first.received.length, 2, 'the worker that handed them back sent none of them')
  t.ok(await statesBecome(outbox, Array(5).fill('delivered'), () => otherClock.advance(FLUSH_DELAY_MS)), 'all delivered')
  const events = await outbox.events({ limit: 10 })
  t.same(events.map(({ deliveries }) => deliveries[0].attempts), [1, 1, 1, 1, 1], 'a hand-back is not an attempt')
})

t.test('a burst of results (hundreds within a turn) is written at once, each once', async (t) => {
  const store = createMemoryStore()
  // A loopback address without the allow-list: every attempt ends at once as blocked, nothing sent.
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: 'http://127.0.0.1:9/hook', secret: newSecret() }], { allowedNetworks: [], retrySchedule: [HOUR] }))
  const outbox = await store.openOutbox({ endpoints: ENDPOINTS, payloads })
  for (let id = 1n; id <= 600n; id++) await store.create({ id, name: 'a' })
  const written: number[] = []
  const record = outbox.record.bind(outbox)
  outbox.record = async (records) => {
    written.push(records.length)
    await record(records)
  }
  const clock = nowClock()
  const worker = new DeliveryWorker({ outbox, config, log: quiet, clock })
  t.teardown(() => worker.stop(0))
  worker.start()
  t.ok(await eventually(async () => {
    await clock.advance(DEFAULT_CLAIM_GAP_MS)
    return written.reduce((sum, count) => sum + count, 0) === 600
  }), 'every result written')
  t.ok(written.some((count) => count >= 512), `written in batches as large as the burst (${written.join(', ')})`)
  const events = await outbox.events({ limit: 600 })
  t.ok(events.every(({ deliveries: [delivery] }) => delivery.attempts === 1 && delivery.history[0].outcome === 'blocked'), 'each blocked once, recorded once')
})

t.test('woken while a claim is on its way (a slow store), the worker claims again right after it, not at the next poll', async (t) => {
  const receiver = await startReceiver(t)
  const store = createMemoryStore()
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: receiver.url, secret: newSecret() }]))
  const outbox = await store.openOutbox({ endpoints: ENDPOINTS, payloads })
  const claim = outbox.claim.bind(outbox)
  let claims = 0
  let answer!: () => void
  const answered = new Promise<void>((resolve) => { answer = resolve })
  outbox.claim = async (wants, leaseMs) => {
    // The first claim reads the store, then is slow to come back: until the test lets it.
    const claimed = await claim(wants, leaseMs)
    if (++claims === 1) await answered
    return claimed
  }
  const clock = nowClock()
  const worker = new DeliveryWorker({ outbox, config, log: quiet, clock, pollMs: HOUR })
  t.teardown(() => worker.stop(0))
  worker.start()
  t.ok(await eventually(() => claims === 1), 'the first claim has read the store')
  // Committed after the first claim read the store: it finds nothing.
  await store.create({ id: 1n, name: 'a' })
  worker.wake()
  await clock.advance(DEFAULT_CLAIM_GAP_MS)
  answer()
  t.ok(await eventually(() => receiver.received.length === 1, 5000), 'sent once the first claim is back, with the next poll an hour away')
  t.equal(claims, 2, 'one claim more')
})

t.test('after a 410, the deliveries claimed ahead for that endpoint are handed back unsent: pending until it is enabled again', async (t) => {
  let gone = false
  const receiver = await startReceiver(t, (response) => { response.writeHead(gone ? 410 : 204).end() })
  const store = createMemoryStore()
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: receiver.url, secret: newSecret() }], { timeout: 1000 }))
  const outbox = watchedOutbox(await store.openOutbox({ endpoints: ENDPOINTS, payloads }))
  const warnings: string[] = []
  const clock = nowClock()
  const worker = new DeliveryWorker({ outbox, config, log: { warn: (_object, message) => warnings.push(message) }, clock, concurrency: 1, pollMs: HOUR })
  t.teardown(() => worker.stop(0))
  await store.create({ id: 1n, name: 'a' })
  worker.start()
  t.ok(await statesBecome(outbox, ['delivered'], () => clock.advance(FLUSH_DELAY_MS)), 'the first delivered, fast')
  gone = true
  for (let id = 2n; id <= 5n; id++) await store.create({ id, name: 'a' })
  // One slot: one sent, three claimed ahead behind it.
  worker.wake()
  await clock.advance(DEFAULT_CLAIM_GAP_MS)
  t.ok(await statesBecome(outbox, ['delivered', 'pending', 'pending', 'pending', 'pending'], () => clock.advance(FLUSH_DELAY_MS)), 'the rest pending')
  t.ok(await eventually(() => warnings.length > 0), 'the endpoint disabled')
  t.equal(outbox.claimed(), 5, 'the first, then the four claimed together')
  // Two polls later: a delivery of the disabled endpoint would have been claimed again.
  await clock.advance(2 * HOUR)
  t.equal(outbox.claimed(), 5, 'nothing claimed after the 410')
  t.equal(receiver.received.length, 2, 'nothing sent after the 410')
  const events = await outbox.events({ limit: 10 })
  t.same(events.map(({ deliveries }) => deliveries[0].attempts), [1, 1, 0, 0, 0], 'the ones handed back: no attempt')
  t.same(warnings, ['webhooks: endpoint disabled'], 'disabled once')
  t.match(await outbox.endpoints(), [{ name: 'e0', enabled: false }])
})

t.test('an endpoint that never answers holds only its own slots: every event reaches the other at once, the clock short of any timeout', async (t) => {
  const silent = await startReceiver(t, () => {})
  const healthy = await startReceiver(t)
  const store = createMemoryStore()
  const secret = newSecret()
  const config = resolveWebhooks(webhooksFor([{ url: silent.url, secret }, { url: healthy.url, secret }], { timeout: 10_000 }))
  const outbox = await store.openOutbox({ endpoints: config.endpoints.map(({ name, events }) => ({ name, events })), payloads })
  const clock = nowClock()
  const start = clock.now()
  const worker = new DeliveryWorker({ outbox, config, log: quiet, clock, pollMs: HOUR })
  t.teardown(() => worker.stop(0))
  worker.start()
  for (let id = 1; id <= 20; id++) {
    await store.create({ id: BigInt(id), name: 'a' })
    worker.wake()
    await clock.advance(DEFAULT_CLAIM_GAP_MS)
    const arrived = await eventually(() => healthy.received.length === id, 5000)
    if (!arrived) t.fail(`event ${id} did not reach the healthy endpoint`)
  }
  t.pass('each event reached the healthy endpoint')
  t.ok(clock.now() - start < 10_000, 'the clock still short of the silent endpoint\'s timeout')
  t.ok(await eventually(() => silent.received.length === 20), 'the silent endpoint holds all 20 attempts open, each in a slot of its own')
})
