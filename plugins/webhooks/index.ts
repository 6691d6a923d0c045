import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { outboxOpenerOf, type PgPool, type PlantStore } from '../store/index.js'
import type { WebhookOutbox } from '../store/outbox.js'
import type { WebhooksOptions } from './options-schema.js'
import { resolveWebhooks, type WebhooksConfig } from './settings.js'
import { wireEvents, type WebhookObserver } from './events.js'
import { feedOf } from '../feed/index.js'

export type { WebhookObserver }

export interface WebhooksPluginOptions {
  webhooks: WebhooksOptions
  observer?: WebhookObserver | undefined
  /** The store option, which a delivery thread opens on its own. */
  store: string | PgPool | PlantStore
  postgres?: Record<string, unknown> | undefined
}

export class WebhooksUnsupportedStoreError extends Error {
  override name = 'WebhooksUnsupportedStoreError'
}

/** The store's outbox and its settings, for the admin routes, and the delivery's wake-up. */
export interface Webhooks {
  outbox: WebhookOutbox
  config: WebhooksConfig
  /** What an admin route made due (a redelivery, an endpoint enabled) leaves now, not at the next poll. */
  wake: () => void
}

const DECORATOR = 'plantStoreWebhooks'
export const webhooksOf = (fastify: FastifyInstance): Webhooks =>
  (fastify as unknown as Record<typeof DECORATOR, Webhooks>)[DECORATOR]

/**
 * Opens the store's outbox (from then on every create and delete writes its events in its own
 * commit) and runs the delivery while the app runs (in a thread of its own by default, see
 * events.ts): it starts as the app gets ready (ready() resolves once a thread is up, or after a few
 * seconds without it), stops claiming when the app starts to close, and lets attempts in flight
 * finish within drainTimeout.
 */
export default fp<WebhooksPluginOptions>(async function webhooks (fastify, { webhooks, observer, store, postgres }) {
  const config = resolveWebhooks(webhooks)
  const open = outboxOpenerOf(fastify)
  if (open === undefined) {
    throw new WebhooksUnsupportedStoreError('plant-store: option webhooks needs a store that keeps an outbox (openOutbox), as the memory, ' +
      'SQLite and PostgreSQL stores do: without one, no event could be promised for a create. Use one of those stores, or remove the webhooks option')
  }
  const { outbox, delivery } = await wireEvents(open, config, fastify.log, { webhooks, store, postgres }, observer, feedOf(fastify))
  fastify.decorate(DECORATOR, { outbox, config, wake: () => delivery.wake() })
  fastify.addHook('onReady', async () => delivery.start())
  // Stops claiming at once; the attempts in flight finish while the requests do.
  fastify.addHook('preClose', async () => { delivery.pause() })
  fastify.addHook('onClose', () => delivery.stop(config.drainTimeout))
}, { name: 'plant-store-webhooks', dependencies: ['plant-store-store'] })
