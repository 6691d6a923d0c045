// What the service and its client (plant-store/client) must agree on beyond the schemas. This
// module imports nothing, so that the client can load it without TypeBox or anything of the server.

/**
 * What an accepted token may hold: visible ASCII. An Authorization header carries nothing else
 * (RFC 6750's b64token is a subset), and a space would split "Bearer <token>" in two.
 */
export const TOKEN_PATTERN = '^[\\x21-\\x7e]+$'

const ACCEPTABLE_TOKEN = new RegExp(TOKEN_PATTERN)

/** Whether `token` follows TOKEN_PATTERN: one that does not could never be accepted. */
export const isAcceptableToken = (token: string) => ACCEPTABLE_TOKEN.test(token)

/** The 404 of GET and DELETE /plants/{id}: the client tells it from a 404 for a route that does not exist. */
export const PLANT_NOT_FOUND_MESSAGE = 'No plant has this id'

/** The webhook event types: the one list the settings, the stores' outboxes and the payloads use. */
export const PLANT_CREATED = 'plant.created'
export const PLANT_DELETED = 'plant.deleted'
export const PLANT_UPDATED = 'plant.updated'
export const WEBHOOK_EVENT_TYPES = [PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED] as const
export type WebhookEventType = typeof WEBHOOK_EVENT_TYPES[number]

/** The int64 range of plant ids. */
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
