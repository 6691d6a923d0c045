import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { WebhookObserver, WebhookOutbox } from '../src/service-api.js'

/** The webhook metrics, fed by the plugin's observer; the outbox's state is read when scraped. */
export function webhookMetrics (registry: Registry): WebhookObserver {
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
  const source: { outbox?: WebhookOutbox } = {}
  const gauge = (name: string, help: string, read: (outbox: WebhookOutbox, gauge: Gauge<'endpoint'>) => Promise<void>) =>
    new Gauge({
      name,
      help,
      labelNames: ['endpoint'] as const,
      registers,
      async collect () {
        this.reset()
        // A store that does not answer leaves the series out of this scrape.
        if (source.outbox !== undefined) await read(source.outbox, this).catch(() => {})
      }
    })
  const byEndpoint = (pick: (stats: Awaited<ReturnType<WebhookOutbox['stats']>>[number]) => number) =>
    async (outbox: WebhookOutbox, gauge: Gauge<'endpoint'>) => {
      for (const stats of await outbox.stats()) gauge.set({ endpoint: stats.endpoint }, pick(stats))
    }
  gauge('plant_store_webhook_pending', 'Webhook deliveries waiting to be sent, by endpoint', byEndpoint(({ pending }) => pending))
  gauge('plant_store_webhook_oldest_pending_seconds', 'Age of the oldest pending webhook delivery, by endpoint',
    byEndpoint(({ oldestPendingMs }) => oldestPendingMs / 1000))
  gauge('plant_store_webhook_dead_letters', 'Webhook deliveries that failed their last attempt, by endpoint', byEndpoint(({ failed }) => failed))
  gauge('plant_store_webhook_endpoint_enabled', 'Whether a webhook endpoint is enabled (1) or disabled (0)', async (outbox, gauge) => {
    for (const state of await outbox.endpoints()) gauge.set({ endpoint: state.name }, state.enabled ? 1 : 0)
  })
  return {
    event: (type, count) => events.inc({ type }, count),
    attempt (endpoint, outcome, seconds) {
      attempts.inc({ endpoint, outcome })
      duration.observe({ endpoint }, seconds)
    },
    outbox (outbox) {
      source.outbox = outbox
    }
  }
}
