/**
 * The outbox's state in /metrics comes from one reading at most every OUTBOX_READING_MAX_AGE,
 * however many scrapes come: a scrape costs the same whatever the backlog. Only the first scrape
 * waits for a reading; a later one gets the latest and starts the next when it is old.
 */
import { Registry } from 'prom-client'
import t from 'tap'
import type { EndpointState, EndpointStats, WebhookOutbox } from '../../plugins/store/outbox.js'
import { OUTBOX_READING_MAX_AGE, webhookMetrics } from '../../service/observe/webhook-metrics.js'

/** An outbox whose reads are counted, answering `pending` for one endpoint, or failing. */
function countedOutbox () {
  const state = { reads: 0, pending: 5, fails: false }
  const outbox = {
    async stats (): Promise<EndpointStats[]> {
      state.reads++
      if (state.fails) throw new Error('store down')
      return [{ endpoint: 'e0', pending: state.pending, oldestPendingMs: 2000, failed: 1 }]
    },
    async endpoints (): Promise<EndpointState[]> {
      if (state.fails) throw new Error('store down')
      return [{ name: 'e0', enabled: true }] as EndpointState[]
    }
  } as unknown as WebhookOutbox
  return { outbox, state }
}

const pendingIn = (text: string) => /^plant_store_webhook_pending\{endpoint="e0"\} (\d+)$/m.exec(text)?.[1]

t.test('many scrapes within the reading\'s age read the outbox once; an old reading is replaced without a scrape waiting', async (t) => {
  let clock = 0
  const registry = new Registry()
  const observer = webhookMetrics(registry, () => clock)
  const { outbox, state } = countedOutbox()
  observer.outbox(outbox)

  const first = await registry.metrics()
  t.equal(pendingIn(first), '5', 'the first scrape waits for the first reading')
  t.match(first, /plant_store_webhook_oldest_pending_seconds\{endpoint="e0"\} 2\b/)
  t.match(first, /plant_store_webhook_dead_letters\{endpoint="e0"\} 1\b/)
  t.match(first, /plant_store_webhook_endpoint_enabled\{endpoint="e0"\} 1\b/)
  for (let scrape = 0; scrape < 100; scrape++) await registry.metrics()
  t.equal(state.reads, 1, '101 scrapes, one reading')

  state.pending = 7
  clock += OUTBOX_READING_MAX_AGE
  t.equal(pendingIn(await registry.metrics()), '5', 'a scrape that finds the reading old gets it, and does not wait for the next')
  t.equal(state.reads, 2, 'the next reading has begun')
  t.equal(pendingIn(await registry.metrics()), '7', 'the scrape after that gets the new reading')
  t.equal(state.reads, 2)

  state.fails = true
  clock += OUTBOX_READING_MAX_AGE
  await registry.metrics()
  t.equal(pendingIn(await registry.metrics()), undefined, 'a reading that fails leaves the series out')
  state.fails = false
  clock += OUTBOX_READING_MAX_AGE
  await registry.metrics()
  t.equal(pendingIn(await registry.metrics()), '7', 'until the next one succeeds')
})

t.test('without an outbox (no store yet), the series are left out', async (t) => {
  const registry = new Registry()
  webhookMetrics(registry)
  t.equal(pendingIn(await registry.metrics()), undefined)
})
