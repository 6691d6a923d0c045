/**
 * The delivery worker on an injected clock and random source: the times it records follow the
 * retry schedule, its jitter and Retry-After to the millisecond, with no wait and no wall-clock
 * margin. The wall-clock tests (webhook-delivery) keep only what needs a real receiver's timing.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { AttemptRecord } from '../../plugins/store/outbox.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { BACKOFF_MS } from '../../plugins/webhooks/delivery/schedule.js'
import { DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

type Responder = NonNullable<Parameters<typeof startReceiver>[1]>

// Fixed instants, far from the real time: a time taken from the real clock would show. The store
// claims what is due by its own clock: a retry due after FUTURE waits forever, one after PAST at once.
const FUTURE = Date.parse('2030-01-01T00:00:00.000Z')
const PAST = Date.parse('2020-01-01T00:00:00.000Z')

/**
 * A worker on a memory store whose one endpoint answers with `respond`, on the clock `now`, polling
 * often (a retry that falls due while its result is being written is claimed soon after); the
 * records it writes and its warnings kept.
 */
async function workerWith (t: Test, now: () => number, respond: Responder, random: () => number, settings: Parameters<typeof webhooksFor>[1] = {}) {
  const receiver = await startReceiver(t, respond)
  const store = createMemoryStore()
  const config = resolveWebhooks(webhooksFor([{ url: receiver.url, secret: newSecret() }], settings))
  const outbox = await store.openOutbox({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
    payloads: eventPayloads
  })
  const records: AttemptRecord[] = []
  const record = outbox.record.bind(outbox)
  outbox.record = async (written) => {
    records.push(...written)
    await record(written)
  }
  const warnings: string[] = []
  const worker = new DeliveryWorker({ outbox, config, log: { warn: (_object, message) => warnings.push(message) }, now, random, pollMs: 20 })
  t.teardown(() => worker.stop(0))
  await store.create({ id: 1n, name: 'a' })
  worker.start()
  /** The one delivery once its history has `attempts` entries (or as it is after 20 s). */
  const deliveryAfter = async (attempts: number) => {
    for (const end = Date.now() + 20_000; ; await sleep(10)) {
      const [event] = await outbox.events({ limit: 1 })
      const delivery = event?.deliveries[0]
      if (delivery?.history.length === attempts || Date.now() > end) return delivery
    }
  }
  return { receiver, outbox, records, warnings, deliveryAfter }
}

t.test('after a 500, the next attempt is due the scheduled wait after the failure, jittered by the random source', async (t) => {
  for (const [random, factor] of [[0, 0.8], [0.5, 1], [1, 1.2]] as const) {
    const { receiver, deliveryAfter } = await workerWith(t, () => FUTURE, (response) => { response.statusCode = 500; response.end() }, () => random, { retrySchedule: [10_000, 20_000] })
    const delivery = await deliveryAfter(1)
    t.equal(receiver.received.length, 1, `random ${random}: one attempt`)
    t.match(delivery, { state: 'pending', attempts: 1 })
    t.equal(delivery?.dueAt?.getTime(), FUTURE + 10_000 * factor, `random ${random}: due ${10_000 * factor} ms after the failure`)
    t.equal(Number(receiver.received[0].headers['webhook-timestamp']), FUTURE / 1000, 'signed at the worker\'s time')
  }
})

t.test('a 503 waits the backoff at least; a 429 with Retry-After waits what it asks when longer', async (t) => {
  const unavailable = await workerWith(t, () => FUTURE, (response) => { response.writeHead(503).end() }, () => 0.5, { retrySchedule: [100] })
  t.equal((await unavailable.deliveryAfter(1))?.dueAt?.getTime(), FUTURE + BACKOFF_MS, `503: due ${BACKOFF_MS} ms later, not the scheduled 100`)
  const limited = await workerWith(t, () => FUTURE, (response) => { response.writeHead(429, { 'retry-after': '600' }).end() }, () => 0.5, { retrySchedule: [100] })
  t.equal((await limited.deliveryAfter(1))?.dueAt?.getTime(), FUTURE + 600_000, '429 with Retry-After: 600: due 600 s later')
})

t.test('the last scheduled wait spent, a failure is final: a dead letter', async (t) => {
  const { receiver, deliveryAfter } = await workerWith(t, () => PAST, (response) => { response.statusCode = 500; response.end() }, () => 0.5, { retrySchedule: [1] })
  const failed = await deliveryAfter(2)
  t.match(failed, { state: 'failed', attempts: 2 }, 'the second failure is the last')
  t.equal(receiver.received.length, 2, 'two attempts')
})

t.test('500, 500, then 200: each retry due its scheduled wait after the failure before it; delivered, then no attempt more', async (t) => {
  // Each attempt an hour after the one before on the worker's clock: the waits count from each failure.
  let at = PAST
  const { receiver, outbox, records } = await workerWith(t, () => at, (response, _received, index) => {
    at = PAST + index * 3_600_000
    response.statusCode = index < 2 ? 500 : 200
    response.end()
  }, () => 0, { retrySchedule: [10_000, 20_000, 30_000] })
  t.ok(await eventually(() => records.length === 3), 'three attempts recorded')
  t.same(records.map(({ outcome, status, at }) => [outcome, status, at.getTime()]),
    [['http_error', 500, PAST], ['http_error', 500, PAST + 3_600_000], ['success', 200, PAST + 7_200_000]], 'at the worker\'s time of each')
  t.same(records.map(({ next }) => next.state === 'pending' ? next.dueAt.getTime() : next.state),
    [PAST + 8000, PAST + 3_600_000 + 16_000, 'delivered'], 'due the scheduled wait after each failure, -20 % by the random source; then delivered')
  t.equal(new Set(receiver.received.map(({ headers }) => headers['webhook-id'])).size, 1, 'the same webhook-id on every attempt')
  // Five polls and more: an attempt after the success would have been claimed.
  await sleep(150)
  t.equal(receiver.received.length, 3, 'none after the success')
  t.match((await outbox.events({ limit: 1 }))[0].deliveries[0], { state: 'delivered', attempts: 3 })
})

t.test('no success for disableAfter on the worker\'s clock: the endpoint is disabled at the failure that reaches it, saying since when', async (t) => {
  // A failure every 20 minutes of the worker's clock; disableAfter an hour: the fourth failure disables it.
  let at = PAST
  const { receiver, outbox, warnings } = await workerWith(t, () => at, (response, _received, index) => {
    at = PAST + index * 1_200_000
    response.statusCode = 500
    response.end()
  }, () => 0, { retrySchedule: Array(10).fill(1), disableAfter: 3_600_000 })
  t.ok(await eventually(() => warnings.length > 0), 'disabled')
  t.same(warnings, ['webhooks: endpoint disabled'])
  t.match(await outbox.endpoints(), [{ name: 'e0', enabled: false, disabledReason: `no successful delivery since ${new Date(PAST).toISOString()}` }])
  await sleep(150)
  t.equal(receiver.received.length, 4, 'four attempts: at 0, 20, 40 and 60 minutes, none after')
  t.match((await outbox.events({ limit: 1 }))[0].deliveries[0], { state: 'pending', attempts: 4 }, 'the delivery kept for when it is enabled again')
})
