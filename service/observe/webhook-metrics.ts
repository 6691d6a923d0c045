import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { EndpointState, EndpointStats, WebhookObserver, WebhookOutbox } from '../../src/service-api.js'

/**
 * The oldest reading of the outbox a scrape is given, in ms. Reading it scans the backlog (85 ms
 * for 200,000 pending on SQLite): at most one reading per this period, whatever the number of
 * scrapers, keeps their cost from growing with the backlog.
 */
export const OUTBOX_READING_MAX_AGE = 10_000

interface Reading { stats: EndpointStats[], endpoints: EndpointState[] }

/**
 * The outbox's latest reading. Only the first scrape waits for one; after that a scrape is given
 * the latest, and one that finds it older than OUTBOX_READING_MAX_AGE starts the next without
 * waiting for it. A store that does not answer leaves the series out until the next reading.
 */
function outboxReadings (now: () => number) {
  let latest: Reading | undefined
  let readAt = -Infinity
  let reading: Promise<void> | undefined
  const read = (outbox: WebhookOutbox) => {
    reading ??= Promise.all([outbox.stats(), outbox.endpoints()])
      .then(([stats, endpoints]) => { latest = { stats, endpoints } }, () => { latest = undefined })
      .finally(() => {
        readAt = now()
        reading = undefined
      })
    return reading
  }
  return async (outbox: WebhookOutbox): Promise<Reading | undefined> => {
    if (now() - readAt >= OUTBOX_READING_MAX_AGE) {
      const next = read(outbox)
      if (readAt === -Infinity) await next
    }
    return latest
  }
}

/**
 * The webhook metrics, fed by the plugin's observer; the outbox's state is read at most every
 * OUTBOX_READING_MAX_AGE, when scraped. `now` is the clock the readings' age is measured with.
 */
export function webhookMetrics (registry: Registry, now: () => number = Date.now): WebhookObserver {
  const registers = [registry]
  const events = new Counter({
    name: 'plant_store_webhook_events_total',
    help: 'Webhook events written with their commit, by type (plant.created equals plant_store_plants_created_total)',
    labelNames: ['type'] as const,
    registers
  })
  const attempts = new Counter({
    name: 'plant_store_webhook_attempts_total',
    help: 'Webhook delivery attempts, by endpoint and outcome (success, http_error, timeout, network, blocked, gone)',
    labelNames: ['endpoint', 'outcome'] as const,
    registers
  })
  const duration = new Histogram({
    name: 'plant_store_webhook_attempt_duration_seconds',
    help: 'Time a webhook delivery attempt takes, by endpoint',
    labelNames: ['endpoint'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers
  })
  const restarts = new Counter({
    name: 'plant_store_webhook_thread_restarts_total',
    help: 'Times the delivery thread ended without being asked to and was started again, by reason (out_of_memory, error, exit)',
    labelNames: ['reason'] as const,
    registers
  })
  const source: { outbox?: WebhookOutbox } = {}
  const latest = outboxReadings(now)
  const gauge = (name: string, help: string, set: (reading: Reading, gauge: Gauge<'endpoint'>) => void) =>
    new Gauge({
      name,
      help,
      labelNames: ['endpoint'] as const,
      registers,
      async collect () {
        this.reset()
        const reading = source.outbox && await latest(source.outbox)
        if (reading !== undefined) set(reading, this)
      }
    })
  const byEndpoint = (pick: (stats: EndpointStats) => number) => ({ stats }: Reading, gauge: Gauge<'endpoint'>) => {
    for (const each of stats) gauge.set({ endpoint: each.endpoint }, pick(each))
  }
  gauge('plant_store_webhook_pending', 'Webhook deliveries waiting to be sent, by endpoint', byEndpoint(({ pending }) => pending))
  gauge('plant_store_webhook_oldest_pending_seconds', 'Age of the oldest pending webhook delivery, by endpoint',
    byEndpoint(({ oldestPendingMs }) => oldestPendingMs / 1000))
  gauge('plant_store_webhook_dead_letters', 'Webhook deliveries that failed their last attempt, by endpoint', byEndpoint(({ failed }) => failed))
  gauge('plant_store_webhook_endpoint_enabled', 'Whether a webhook endpoint is enabled (1) or disabled (0)', ({ endpoints }, gauge) => {
    for (const state of endpoints) gauge.set({ endpoint: state.name }, state.enabled ? 1 : 0)
  })
  return {
    event: (type, count) => events.inc({ type }, count),
    attempt (endpoint, outcome, seconds) {
      attempts.inc({ endpoint, outcome })
      duration.observe({ endpoint }, seconds)
    },
    // A delivery thread's batch: the counter once, on the thread that serves HTTP.
    attempts (endpoint, outcome, seconds) {
      attempts.inc({ endpoint, outcome }, seconds.length)
      const labels = { endpoint }
      for (const each of seconds) duration.observe(labels, each)
    },
    outbox (outbox) {
      source.outbox = outbox
    },
    threadRestart: (reason) => restarts.inc({ reason })
  }
}
