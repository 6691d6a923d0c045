/**
 * How the delivery worker claims: a fast endpoint's backlog ahead of its free slots, results written
 * in batches. A delivery claimed ahead never waits past the slack its lease leaves, a burst of
 * results is written at once, and a wake-up during a claim is not lost.
 */
import type { ServerResponse } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { WebhookOutbox } from '../../plugins/store/outbox.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { eventPayloads as payloads } from '../../plugins/webhooks/events.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

const quiet = { warn () {} }

/** Waits until the outbox's deliveries (one endpoint) have `states`, up to 20 s; resolves whether they did. */
async function statesBecome (outbox: WebhookOutbox, states: string[]): Promise<boolean> {
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(10)) {
    const events = await outbox.events({ limit: states.length + 1 })
    if (events.map(({ deliveries }) => deliveries[0].state).join() === states.join()) return true
  }
  return false
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
  const outbox = await store.openOutbox({ endpoints: [{ name: 'e0', events: ['plant.created'] }], payloads })
  // One slot, its clock in our hands, no polling: it claims when woken.
  let at = Date.now()
  const ahead = new DeliveryWorker({ outbox, config: configOf(first.url), log: quiet, concurrency: 1, pollMs: 3_600_000, now: () => at })
  t.teardown(() => ahead.stop(0))
  await store.create({ id: 1n, name: 'a' })
  ahead.start()
  t.ok(await eventually(() => first.received.length === 1), 'the first event is sent at once')
  t.ok(await statesBecome(outbox, ['delivered']), 'and recorded')

  // Its endpoint answered fast: the next claim takes more than its one slot.
  holding = true
  for (let id = 2n; id <= 5n; id++) await store.create({ id, name: 'a' })
  ahead.wake()
  t.ok(await eventually(() => first.received.length === 2), 'one sent, held by the receiver; three wait in the worker')
  at += 600
  // Another instance, which finds nothing due until they are handed back.
  const instance = new DeliveryWorker({ outbox, config: configOf(other.url), log: quiet, pollMs: 50 })
  t.teardown(() => instance.stop(0))
  instance.start()
  held.shift()!.writeHead(204).end()
  t.ok(await eventually(() => other.received.length === 3), `the three waiting are sent by the other instance (${other.received.length})`)
  const ids = [...first.received, ...other.received].map(({ headers }) => headers['webhook-id'])
  t.equal(new Set(ids).size, 5, 'each event sent once')
  t.equal(first.received.length, 2, 'the worker that handed them back sent none of them')
  t.ok(await statesBecome(outbox, Array(5).fill('delivered')), 'all delivered')
  const events = await outbox.events({ limit: 10 })
  t.same(events.map(({ deliveries }) => deliveries[0].attempts), [1, 1, 1, 1, 1], 'a hand-back is not an attempt')
})

t.test('a burst of results (hundreds within a turn) is written at once, each once', async (t) => {
  const store = createMemoryStore()
  // A loopback address without the allow-list: every attempt ends at once as blocked, nothing sent.
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: 'http://127.0.0.1:9/hook', secret: newSecret() }], { allowedNetworks: [], retrySchedule: [3_600_000] }))
  const outbox = await store.openOutbox({ endpoints: [{ name: 'e0', events: ['plant.created'] }], payloads })
  for (let id = 1n; id <= 600n; id++) await store.create({ id, name: 'a' })
  const written: number[] = []
  const record = outbox.record.bind(outbox)
  outbox.record = async (records) => {
    written.push(records.length)
    await record(records)
  }
  const worker = new DeliveryWorker({ outbox, config, log: quiet })
  t.teardown(() => worker.stop(0))
  worker.start()
  t.ok(await eventually(() => written.reduce((sum, count) => sum + count, 0) === 600), 'every result written')
  t.ok(written.some((count) => count >= 512), `written in batches as large as the burst (${written.join(', ')})`)
  const events = await outbox.events({ limit: 600 })
  t.ok(events.every(({ deliveries: [delivery] }) => delivery.attempts === 1 && delivery.history[0].outcome === 'blocked'), 'each blocked once, recorded once')
})

t.test('woken while a claim is on its way (a slow store), the worker claims again right after it, not at the next poll', async (t) => {
  const receiver = await startReceiver(t)
  const store = createMemoryStore()
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: receiver.url, secret: newSecret() }]))
  const outbox = await store.openOutbox({ endpoints: [{ name: 'e0', events: ['plant.created'] }], payloads })
  const claim = outbox.claim.bind(outbox)
  let claims = 0
  outbox.claim = async (wants, leaseMs) => {
    claims++
    // Each claim takes the store 300 ms: the wake-up below comes while the first is on its way.
    await sleep(300)
    return await claim(wants, leaseMs)
  }
  const worker = new DeliveryWorker({ outbox, config, log: quiet, pollMs: 3_600_000 })
  t.teardown(() => worker.stop(0))
  worker.start()
  await eventually(() => claims === 1)
  // Committed after the first claim read the store: it finds nothing.
  await sleep(100)
  await store.create({ id: 1n, name: 'a' })
  worker.wake()
  t.ok(await eventually(() => receiver.received.length === 1, 5000), 'sent once the first claim is back, an hour before the next poll')
  t.equal(claims, 2, 'one claim more')
})

t.test('after a 410, the deliveries claimed ahead for that endpoint are handed back unsent: pending until it is enabled again', async (t) => {
  let gone = false
  const receiver = await startReceiver(t, (response) => { response.writeHead(gone ? 410 : 204).end() })
  const store = createMemoryStore()
  const config = resolveWebhooks(webhooksFor([{ name: 'e0', url: receiver.url, secret: newSecret() }], { timeout: 1000 }))
  const outbox = await store.openOutbox({ endpoints: [{ name: 'e0', events: ['plant.created'] }], payloads })
  const warnings: string[] = []
  const worker = new DeliveryWorker({ outbox, config, log: { warn: (_object, message) => warnings.push(message) }, concurrency: 1, pollMs: 3_600_000 })
  t.teardown(() => worker.stop(0))
  await store.create({ id: 1n, name: 'a' })
  worker.start()
  t.ok(await statesBecome(outbox, ['delivered']), 'the first delivered, fast')
  gone = true
  for (let id = 2n; id <= 5n; id++) await store.create({ id, name: 'a' })
  // One slot: one sent, three claimed ahead behind it.
  worker.wake()
  t.ok(await statesBecome(outbox, ['delivered', 'pending', 'pending', 'pending', 'pending']), 'the rest pending')
  t.ok(await eventually(() => warnings.length > 0), 'the endpoint disabled')
  await sleep(200)
  t.equal(receiver.received.length, 2, 'nothing sent after the 410')
  const events = await outbox.events({ limit: 10 })
  t.same(events.map(({ deliveries }) => deliveries[0].attempts), [1, 1, 0, 0, 0], 'the ones handed back: no attempt')
  t.same(warnings, ['webhooks: endpoint disabled'], 'disabled once')
  t.match(await outbox.endpoints(), [{ name: 'e0', enabled: false }])
})
