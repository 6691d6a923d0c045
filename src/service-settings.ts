/**
 * What the service's settings take of the plugin: defaults, bounds, the option schemas they are
 * checked against and the errors a setting can end in. Nothing behind it loads Fastify or a store:
 * a service refused for a setting has loaded neither (service/entry-points/server.ts).
 */
export { DEFAULT_AUTH_FAILURE_LIMIT, LoadSheddingOptionsSchema, RateLimitOptionsSchema } from '../plugins/http/limit-options.js'
export { STORE_URL_PATTERN, StoreOpenError } from '../plugins/store/store-url.js'
export { DEFAULT_DATABASE_URL } from '../plugins/store/sqlite/files.js'
export {
  DEFAULT_RETENTION, DEFAULT_RETRY_SCHEDULE, parseDuration, resolveWebhooks, WEBHOOK_DELIVERY_PLACES, WEBHOOK_EVENT_TYPES, WebhookSettingError, type WebhookEventType
} from '../plugins/webhooks/settings.js'
export { WEBHOOK_ENDPOINT_KEYS, WebhooksOptionsSchema, type WebhooksOptions } from '../plugins/webhooks/options-schema.js'
