/**
 * What the standalone service uses of the plugin beyond its public entry: one deliberate door, so
 * service/ never reaches into plugin internals. Not a package export: the service is not shipped.
 */
export { default as plantStore, type PlantStoreOptions } from './plugin.js'
export { default as deliveryOnly } from './delivery-only.js'
export * from './service-settings.js'
export { default as errorHandler, errorJson, handleClientError, handleFrameworkError, handleNotFound, rawErrorResponse, ROUTE_NOT_FOUND, sendError } from '../plugins/http/error-handler.js'
export { trackMethods } from '../plugins/http/method-not-allowed.js'
export { every, systemClock, type Clock } from '../plugins/http/clock.js'
export { hasVerifiedToken } from '../plugins/auth/verified-token.js'
export type { PlantStore } from '../plugins/store/index.js'
export { sqliteFileOf, sqliteFiles } from '../plugins/store/sqlite/files.js'
export type { EndpointState, EndpointStats, WebhookOutbox } from '../plugins/store/outbox.js'
export type { WebhookObserver } from '../plugins/webhooks/index.js'
export { openapiWebhooks } from '../routes/openapi/webhooks.js'
export { openapiDeclarations } from '../routes/openapi/names.js'
export { isLivenessProbe } from '../routes/health.js'
export type { WebhookTracing } from '../plugins/webhooks/delivery/tracing.js'
export { plantCreatedPayload } from '../plugins/webhooks/delivery/payload.js'
export { messageId, webhookHeaders } from '../plugins/webhooks/delivery/signing.js'
export { runDeliveryThread } from '../plugins/webhooks/thread/thread-side.js'
export { threadModule } from '../plugins/webhooks/thread/host-side.js'
export type { DeliveryThreadData } from '../plugins/webhooks/thread/messages.js'
