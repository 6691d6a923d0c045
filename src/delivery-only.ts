import type { FastifyPluginAsync } from 'fastify'
import errorHandler from '../plugins/http/error-handler.js'
import strictValidation from '../plugins/http/validation.js'
import healthRoutes from '../routes/health.js'
import { DEFAULT_OPENAPI_NAMES } from '../routes/openapi/names.js'
import { DEFAULT_MAX_TEXT_LENGTH } from '../schemas/index.js'
import store from '../plugins/store/index.js'
import webhooks from '../plugins/webhooks/index.js'
import type { PlantStoreOptions } from './options.js'

export type DeliveryOnlyOptions = Pick<PlantStoreOptions, 'store' | 'postgres' | 'wrapStore' | 'observeWebhooks'> &
  { webhooks: NonNullable<PlantStoreOptions['webhooks']> }

/**
 * A delivery-only instance (the service's API=off): the store's outbox delivered where
 * `webhooks.delivery` says (a thread or in-process), /healthz and /readyz, and no plant or admin
 * route. Beside API instances that write the outbox and deliver nothing (delivery 'off'), on the
 * same PostgreSQL database or SQLite file.
 */
const deliveryOnly: FastifyPluginAsync<DeliveryOnlyOptions> = async (fastify, options) => {
  // The shared schemas, which the health routes' answers reference.
  await fastify.register(strictValidation, { maxTextLength: DEFAULT_MAX_TEXT_LENGTH })
  await fastify.register(errorHandler)
  await fastify.register(store, { store: options.store, postgres: options.postgres, wrap: options.wrapStore })
  await fastify.register(webhooks, { webhooks: options.webhooks, observer: options.observeWebhooks, store: options.store, postgres: options.postgres })
  await fastify.register(healthRoutes, { tag: DEFAULT_OPENAPI_NAMES.healthTag })
}

export default deliveryOnly
