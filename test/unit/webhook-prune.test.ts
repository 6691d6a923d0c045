/**
 * Finished events past the retention are removed as fast as they come: however many there are,
 * the outbox shrinks to what the retention keeps, in small batches, without waiting for the next
 * hourly run. Real SQLite file, the real worker.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { PRUNE_PAUSE_MS } from '../../plugins/webhooks/delivery/upkeep.js'
import { DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

// More than the 10,000 an hourly run of one batch once removed: 48 batches of 250.
const EVENTS = 12_000

t.test(`${EVENTS} delivered events past a retention of 1 ms: all pruned at start, not 10,000 an hour`, async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  // An address never sent to: the deliveries are marked delivered behind the worker's back.
  const config = resolveWebhooks(webhooksFor([{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }], { retention: 1 }))
  const outbox = await store.openOutbox({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
    payloads: eventPayloads
  })
  await Promise.all(Array.from({ length: EVENTS }, (_, index) => store.create({ id: BigInt(index + 1), name: 'pruned' })))
  const look = new Database(file)
  look.prepare("UPDATE webhook_deliveries SET state = 'delivered'").run()
  const left = () => Number(look.prepare('SELECT count(*) AS n FROM webhook_events').pluck().get())
  t.equal(left(), EVENTS, `${EVENTS} finished events`)

  const warnings: string[] = []
  // From the real time, by which the store dates its events.
  const clock = fakeClock(Date.now())
  // Hourly: the default. The start's run must take all of them.
  const worker = new DeliveryWorker({ outbox, config, log: { warn: (_object, message) => warnings.push(message) }, clock, pollMs: 60_000, pruneEveryMs: 3_600_000 })
  // In this order: the worker stops writing before the files close, and they close before the
  // test's folder is removed (a checkpoint still writing made its removal fail once).
  t.teardown(async () => {
    await worker.stop(0)
    look.close()
    await store.close()
  })
  const started = clock.now()
  worker.start()
  // The run pauses between its batches on the worker's clock: moved on a pause at a time.
  t.ok(await eventually(async () => {
    await clock.advance(PRUNE_PAUSE_MS)
    return left() === 0
  }, 30_000), 'every event past the retention is pruned', { left: left() })
  t.ok(clock.now() - started < 3_600_000, `by the start's run, not the next hourly one: ${EVENTS - left()} events in ${clock.now() - started} ms of the worker's clock`)
  t.strictSame(warnings, [], 'no warning')
})
