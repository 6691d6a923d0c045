/**
 * What the standalone service uses of the plugin beyond its public entry: one deliberate door, so
 * service/ never reaches into plugin internals. Not a package export: the service is not shipped.
 */
export { default as plantStore, type PlantStoreOptions } from './plugin.js'
export { default as deliveryOnly } from './delivery-only.js'
export { DEFAULT_BODY_LIMIT } from './options.js'
export { default as errorHandler, errorJson, handleClientError, handleFrameworkError, handleNotFound, rawErrorResponse, ROUTE_NOT_FOUND, sendError } from '../plugins/error-handler.js'
export { trackMethods } from '../plugins/method-not-allowed.js'
export { DEFAULT_AUTH_FAILURE_LIMIT, LoadSheddingOptionsSchema, RateLimitOptionsSchema } from '../plugins/limit-options.js'
export { STORE_URL_PATTERN, StoreOpenError, type PlantStore } from '../stores/index.js'
export { DEFAULT_DATABASE_URL, sqliteFileOf, sqliteFiles } from '../stores/sqlite/files.js'
export type { EndpointState, EndpointStats, WebhookOutbox } from '../stores/outbox.js'
export { DEFAULT_RETRY_SCHEDULE, readWebhooksEnv, WEBHOOK_EVENT_TYPES, WebhookSettingError, type WebhooksOptions } from '../webhooks/config.js'
export type { WebhookObserver } from '../webhooks/plugin.js'
export { openapiWebhooks } from '../routes/webhook-docs.js'
export { isLivenessProbe } from '../routes/health.js'
export type { WebhookTracing } from '../webhooks/tracing.js'
export { runDeliveryThread } from '../webhooks/delivery-thread-run.js'
export { threadModule } from '../webhooks/thread-host.js'
export type { DeliveryThreadData } from '../webhooks/thread-messages.js'
