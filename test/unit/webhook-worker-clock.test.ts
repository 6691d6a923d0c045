/**
 * The delivery worker on an injected clock and random source: the times it records follow the
 * retry schedule, its jitter and Retry-After to the millisecond, and what no longer happens is
 * shown by moving the clock past it, with no wait and no wall-clock margin. The wall-clock tests
 * (webhooks/webhook-delivery) keep only what needs the real app.
 */
import t, { type Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { outboxOptions } from '../../plugins/webhooks/events.js'
import { FLUSH_DELAY_MS } from '../../plugins/webhooks/delivery/results.js'
import { BACKOFF_MS } from '../../plugins/webhooks/delivery/schedule.js'
import { DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, watchedOutbox, webhooksFor } from '../helpers/webhooks.js'

type Responder = NonNullable<Parameters<typeof startReceiver>[1]>

// Fixed instants, far from the real time: a time taken from the real clock would show. The memory
// store claims what is due by its own clock: a retry due after FUTURE waits forever, one after PAST at once.
const FUTURE = Date.parse('2030-01-01T00:00:00.000Z')
const PAST = Date.parse('2020-01-01T00:00:00.000Z')
const POLL_MS = 20

/**
 * A worker on a memory store whose one endpoint answers with `respond`, on a fake clock that starts
 * at `start` (the respond function may move it), polling every POLL_MS of it; its claims, results,
 * attempts and warnings kept. Returned once its first claim (at the start) is back.
 */
async function workerWith (t: Test, start: number, respond: (clock: ReturnType<typeof fakeClock>) => Responder, random: () => number,
  settings: Parameters<typeof webhooksFor>[1] = {}) {
  const clock = fakeClock(start)
  const receiver = await startReceiver(t, respond(clock))
  const store = createMemoryStore()
  // A timeout far beyond the clock's moves: no attempt ends by it here.
  const config = resolveWebhooks(webhooksFor([{ url: receiver.url, secret: newSecret() }], { timeout: 3_600_000, ...settings }))
  const outbox = watchedOutbox(await store.openOutbox(outboxOptions(config)))
  const warnings: string[] = []
  const attempts: number[] = []
  const worker = new DeliveryWorker({
    outbox, config, clock, random, pollMs: POLL_MS, log: { warn: (_object, message) => warnings.push(message) }, onAttempt: () => attempts.push(clock.now())
  })
  t.teardown(() => worker.stop(0))
  await store.create({ id: 1n, name: 'a' })
  worker.start()
  t.ok(await eventually(() => outbox.claims.length === 1), 'the start\'s claim is back')
  const delivery = async () => (await outbox.events({ limit: 1 }))[0].deliveries[0]
  /** Moves the clock on a poll at a time, only while no attempt is in flight, until `done` holds (20 s at most). */
  const drive = (done: () => boolean | Promise<boolean>) => eventually(async () => {
    if (outbox.claimed() === attempts.length) await clock.advance(POLL_MS)
    return await done()
  })
  return { clock, receiver, outbox, warnings, attempts, delivery, drive }
}

const answer = (status: number, headers: Record<string, string> = {}) => () => (response: Parameters<Responder>[0]) => { response.writeHead(status, headers).end() }

t.test('after a 500, the next attempt is due the scheduled wait after the failure, jittered by the random source', async (t) => {
  for (const [random, factor] of [[0, 0.8], [0.5, 1], [1, 1.2]] as const) {
    const { clock, receiver, attempts, delivery } = await workerWith(t, FUTURE, answer(500), () => random, { retrySchedule: [10_000, 20_000] })
    t.ok(await eventually(() => attempts.length === 1), `random ${random}: one attempt, with the clock standing still`)
    await clock.advance(FLUSH_DELAY_MS)
    t.equal(receiver.received.length, 1, `random ${random}: one attempt`)
    t.match(await delivery(), { state: 'pending', attempts: 1 })
    t.equal((await delivery()).dueAt?.getTime(), FUTURE + 10_000 * factor, `random ${random}: due ${10_000 * factor} ms after the failure`)
    t.equal(Number(receiver.received[0].headers['webhook-timestamp']), FUTURE / 1000, 'signed at the worker\'s time')
  }
})

t.test('a 503 waits the backoff at least; a 429 with Retry-After waits what it asks when longer', async (t) => {
  for (const [respond, wait, label] of [[answer(503), BACKOFF_MS, `503: due ${BACKOFF_MS} ms later, not the scheduled 100`],
    [answer(429, { 'retry-after': '600' }), 600_000, '429 with Retry-After: 600: due 600 s later']] as const) {
    const { clock, attempts, delivery } = await workerWith(t, FUTURE, respond, () => 0.5, { retrySchedule: [100] })
    t.ok(await eventually(() => attempts.length === 1))
    await clock.advance(FLUSH_DELAY_MS)
    t.equal((await delivery()).dueAt?.getTime(), FUTURE + wait, label)
  }
})

t.test('the last scheduled wait spent, a failure is final: a dead letter, never claimed again', async (t) => {
  const { clock, receiver, outbox, delivery, drive } = await workerWith(t, PAST, answer(500), () => 0.5, { retrySchedule: [1] })
  t.ok(await drive(async () => (await delivery()).state === 'failed'), 'failed')
  t.match(await delivery(), { state: 'failed', attempts: 2 }, 'the second failure is the last')
  t.equal(receiver.received.length, 2, 'two attempts')
  await clock.advance(10 * POLL_MS)
  t.equal(outbox.claimed(), 2, 'ten polls later, nothing more claimed')
})

t.test('500, 500, then 200: each retry due its scheduled wait after the failure before it; delivered, then no attempt more', async (t) => {
  // Each attempt an hour after the one before on the worker's clock: the waits count from each failure.
  const { clock, receiver, outbox, delivery, drive } = await workerWith(t, PAST, (clock) => (response, _received, index) => {
    clock.set(PAST + index * 3_600_000)
    response.statusCode = index < 2 ? 500 : 200
    response.end()
  }, () => 0, { retrySchedule: [10_000, 20_000, 30_000] })
  t.ok(await drive(() => outbox.records.length === 3), 'three attempts recorded')
  t.same(outbox.records.map(({ outcome, status, at }) => [outcome, status, at.getTime()]),
    [['http_error', 500, PAST], ['http_error', 500, PAST + 3_600_000], ['success', 200, PAST + 7_200_000]], 'at the worker\'s time of each')
  t.same(outbox.records.map(({ next }) => next.state === 'pending' ? next.dueAt.getTime() : next.state),
    [PAST + 8000, PAST + 3_600_000 + 16_000, 'delivered'], 'due the scheduled wait after each failure, -20 % by the random source; then delivered')
  t.equal(new Set(receiver.received.map(({ headers }) => headers['webhook-id'])).size, 1, 'the same webhook-id on every attempt')
  // Past the schedule's longest wait, a poll at a time: an attempt after the success would have been claimed.
  await clock.advance(30_000 + POLL_MS)
  t.equal(outbox.claimed(), 3, 'none claimed after the success')
  t.equal(receiver.received.length, 3, 'none sent')
  t.match(await delivery(), { state: 'delivered', attempts: 3 })
})

t.test('no success for disableAfter on the worker\'s clock: the endpoint is disabled at the failure that reaches it, saying since when', async (t) => {
  // A failure every 20 minutes of the worker's clock; disableAfter an hour: the fourth failure disables it.
  const { clock, receiver, outbox, warnings, delivery, drive } = await workerWith(t, PAST, (clock) => (response, _received, index) => {
    clock.set(PAST + index * 1_200_000)
    response.statusCode = 500
    response.end()
  }, () => 0, { retrySchedule: Array(10).fill(1), disableAfter: 3_600_000 })
  t.ok(await drive(() => warnings.length > 0), 'disabled')
  t.same(warnings, ['webhooks: endpoint disabled'])
  t.match(await outbox.endpoints(), [{ name: 'e0', enabled: false, disabledReason: `no successful delivery since ${new Date(PAST).toISOString()}` }])
  // Past the retry wait, a poll at a time: an attempt at the disabled endpoint would have been claimed.
  await clock.advance(10 * POLL_MS)
  t.equal(outbox.claimed(), 4, 'nothing claimed after the fourth')
  t.equal(receiver.received.length, 4, 'four attempts: at 0, 20, 40 and 60 minutes, none after')
  t.match(await delivery(), { state: 'pending', attempts: 4 }, 'the delivery kept for when it is enabled again')
})
