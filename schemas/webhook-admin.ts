import { Type } from 'typebox'
import { Int64 } from './primitives.js'

// The admin views of the webhook outbox. Secrets never appear; an endpoint's URL only as its host.

const DateTime = (description: string) => Type.String({ format: 'date-time', description })
const Outcome = Type.Union(['success', 'http_error', 'timeout', 'network', 'blocked', 'gone'].map((outcome) => Type.Literal(outcome)),
  { description: 'What the attempt came to' })

export const WebhookEndpointViewSchema = Type.Object({
  name: Type.String({ description: 'The endpoint\'s name' }),
  host: Type.String({ description: 'The host (and port) of its URL: the rest of the URL may hold a credential' }),
  events: Type.Array(Type.String(), { description: 'The event types sent to it' }),
  enabled: Type.Boolean({ description: 'false once disabled (a 410, or no success for too long) until re-enabled' }),
  disabledReason: Type.Optional(Type.String({ description: 'Why it was disabled' })),
  disabledAt: Type.Optional(DateTime('When it was disabled')),
  lastSuccessAt: Type.Optional(DateTime('Its last successful delivery')),
  failingSince: Type.Optional(DateTime('Its first failure since its last success')),
  pending: Type.Integer({ minimum: 0, description: 'Deliveries waiting for it' }),
  failed: Type.Integer({ minimum: 0, description: 'Dead letters: deliveries that failed their last attempt' })
}, { description: 'A webhook endpoint and its state' })

export const WebhookEndpointListSchema = Type.Array(WebhookEndpointViewSchema, { description: 'The configured webhook endpoints' })

const AttemptViewSchema = Type.Object({
  at: DateTime('When the attempt started'),
  outcome: Outcome,
  status: Type.Optional(Type.Integer({ description: 'The HTTP status the endpoint answered' })),
  error: Type.Optional(Type.String({ description: 'Why it failed, when no status came back' })),
  durationMs: Type.Integer({ minimum: 0, description: 'How long it took, in ms' })
})

const DeliveryViewSchema = Type.Object({
  endpoint: Type.String({ description: 'The endpoint\'s name' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
    description: 'pending: to be sent; delivered: a 2xx came back; failed: a dead letter after the last attempt'
  }),
  attempts: Type.Integer({ minimum: 0, description: 'Attempts counted towards the retry schedule' }),
  dueAt: Type.Optional(DateTime('When the next attempt is due, while pending')),
  history: Type.Array(AttemptViewSchema, { description: 'Its attempts, oldest first' })
})

export const WebhookEventViewSchema = Type.Object({
  seq: Int64('The event\'s number: ascending in commit order, the cursor of the list'),
  messageId: Type.String({ description: 'Its webhook-id, the same on every attempt and endpoint' }),
  type: Type.String({ description: 'plant.created or plant.deleted' }),
  createdAt: DateTime('When it was committed'),
  payload: Type.String({ description: 'The body sent, byte for byte (JSON text)' }),
  deliveries: Type.Array(DeliveryViewSchema, { description: 'Its delivery to each subscribed endpoint' })
}, { description: 'A webhook event with its deliveries' })

export const WebhookEventListSchema = Type.Array(WebhookEventViewSchema, { description: 'Events in ascending seq order' })

export const WebhookEventListQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 100, default: 20, description: 'The most events in the page' })),
  after: Type.Optional(Int64('Return only events with a greater seq: the last seq of the previous page'))
})

export const WebhookEventParamsSchema = Type.Object({ seq: Int64('The event\'s seq') })
export const WebhookEndpointParamsSchema = Type.Object({ name: Type.String({ description: 'The endpoint\'s name', pattern: '^[A-Za-z0-9_.-]{1,64}$' }) })

export const RedeliverBodySchema = Type.Object({
  endpoint: Type.Optional(Type.String({ description: 'Only to this endpoint (default: every endpoint the event went to)' }))
}, { additionalProperties: false })

export const EnableBodySchema = Type.Object({}, {
  additionalProperties: false, description: 'Nothing: an empty object, or no body at all'
})

export const RedeliveredSchema = Type.Object({
  redelivered: Type.Integer({ minimum: 1, description: 'Deliveries queued again, each for one more attempt with the same webhook-id' })
})
