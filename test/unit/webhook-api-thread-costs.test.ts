/**
 * What webhooks leave to the thread that serves HTTP besides the outbox rows: the attempts a
 * delivery thread tells (for the metrics) are taken in batches, and the log the delivery thread's
 * connection checkpoints is copied whole whenever readers allow, so that it starts over.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Registry } from 'prom-client'
import t from 'tap'
import { webhookMetrics } from '../../service/observe/webhook-metrics.js'
import { catchUpCheckpoint, CHECKPOINT_PASSES, openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { systemClock } from '../../plugins/http/clock.js'
import { DeliveryThread } from '../../plugins/webhooks/thread/host-side.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const STAND_IN = new URL('../helpers/stand-in-delivery-thread.ts', import.meta.url)
const log = { warn () {}, info () {}, error () {} }
const data = { store: 'sqlite:unused.db', webhooks: webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }]) }

t.test('a delivery thread\'s attempts of one endpoint and outcome reach onAttempts at once, when given, and onAttempt never', async (t) => {
  const batches: Array<[string, string, number[]]> = []
  const each: unknown[] = []
  const thread = new DeliveryThread({
    data: { ...data, mode: 'obedient' } as never,
    log,
    clock: systemClock,
    entry: STAND_IN,
    onAttempt: (...attempt) => each.push(attempt),
    onAttempts: (endpoint, outcome, seconds) => batches.push([endpoint, outcome, [...seconds]])
  })
  thread.start()
  t.ok(await eventually(() => batches.length > 0, 30_000), 'the stand-in\'s attempts arrived')
  await thread.stop(100)
  t.same(batches[0], ['e0', 'success', [0.01, 0.02]], 'both attempts, in one call, with the duration of each')
  t.same(each, [], 'none of them one at a time')
})

t.test('the metrics of attempts told in a batch are those of the same attempts told one by one', async (t) => {
  const metricsOf = async (tell: (observer: ReturnType<typeof webhookMetrics>) => void) => {
    const registry = new Registry()
    const observer = webhookMetrics(registry)
    tell(observer)
    const text = await registry.metrics()
    return text.split('\n').filter((line) => /^plant_store_webhook_attempt/.test(line))
  }
  const seconds = [0.003, 0.02, 0.02, 7]
  const oneByOne = await metricsOf((observer) => {
    for (const each of seconds) observer.attempt('e0', 'success', each)
    observer.attempt('e0', 'timeout', 30)
  })
  const batched = await metricsOf((observer) => {
    observer.attempts!('e0', 'success', Float64Array.from(seconds))
    observer.attempts!('e0', 'timeout', Float64Array.of(30))
  })
  t.ok(oneByOne.some((line) => line === 'plant_store_webhook_attempts_total{endpoint="e0",outcome="success"} 4'), 'four successes counted')
  t.ok(oneByOne.some((line) => line === 'plant_store_webhook_attempt_duration_seconds_bucket{le="0.025",endpoint="e0"} 3'), 'three within 25 ms')
  t.same(batched, oneByOne, 'counter and histogram alike')
})

t.test(`a checkpoint passes again while frames are left, ${CHECKPOINT_PASSES} passes at most; once no reader holds the log, one pass copies it whole`, async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  t.teardown(() => store.close())
  // Checkpoints left to another connection, as with a delivery thread: the log keeps every frame.
  await store.openOutbox({
    endpoints: [{ name: 'e', events: ['plant.created'] }],
    payloads: eventPayloads,
    checkpointedElsewhere: true
  })
  for (let id = 1n; id <= 20n; id++) await store.create({ id, name: 'n'.repeat(200) })
  const reader = new Database(file, { readonly: true })
  t.teardown(() => reader.close())
  reader.exec('BEGIN')
  t.same(reader.prepare('SELECT count(*) AS n FROM plants').get(), { n: 20 }, 'the reader\'s snapshot: 20 plants')
  for (let id = 21n; id <= 40n; id++) await store.create({ id, name: 'n'.repeat(200) })
  const checkpointer = new Database(file)
  t.teardown(() => checkpointer.close())
  t.equal(catchUpCheckpoint(checkpointer), CHECKPOINT_PASSES, 'the frames after the reader\'s snapshot cannot be copied: it gives up after the last pass')
  reader.exec('COMMIT')
  t.equal(catchUpCheckpoint(checkpointer), 1, 'the reader gone, one pass copies the rest')
  const [{ log: frames, checkpointed }] = checkpointer.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number, checkpointed: number }>
  t.equal(checkpointed, frames, `the whole log is in the database (${frames} frames)`)
  t.ok(frames > 0, 'and the log had frames to copy')
})
