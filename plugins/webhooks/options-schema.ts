import { Type, type Static } from 'typebox'
import { DEFAULT_THREAD_LIMITS, DEFAULT_WEBHOOK_TIMEOUT, SECRET_RULE, WEBHOOK_DELIVERY_PLACES, WEBHOOK_EVENT_TYPES } from './settings.js'

// The `webhooks` plugin option's schema: src/options.ts checks an app's option against it, and
// settings.ts decodes what it accepted.

const EndpointSchema = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'a name of 1 to 64 letters, digits, _ . -' }),
  url: Type.String({ pattern: '^https?://', description: 'an http:// or https:// URL' }),
  secrets: Type.Array(Type.String({ description: SECRET_RULE }), { minItems: 1, description: `a non-empty array of secrets, each ${SECRET_RULE}` }),
  events: Type.Optional(Type.Array(Type.Enum(WEBHOOK_EVENT_TYPES), {
    minItems: 1, description: `a non-empty array of ${WEBHOOK_EVENT_TYPES.join(', ')} (default plant.created)`
  }))
}, { additionalProperties: false, description: 'an endpoint: {name, url, secrets, events}' })
/** The keys an endpoint takes. */
export const WEBHOOK_ENDPOINT_KEYS = Object.keys(EndpointSchema.properties)

const megabytes = (minimum: number, description: string, key: keyof typeof DEFAULT_THREAD_LIMITS) => Type.Optional(Type.Integer({
  minimum, maximum: 65_536, description: `${description}, in MB, an integer from ${minimum} to 65536 (default ${DEFAULT_THREAD_LIMITS[key]})`
}))

const ThreadLimitsSchema = Type.Object({
  maxOldGenerationSizeMb: megabytes(16, 'the delivery thread\'s main heap', 'maxOldGenerationSizeMb'),
  maxYoungGenerationSizeMb: megabytes(1, 'the heap of its new objects', 'maxYoungGenerationSizeMb'),
  stackSizeMb: megabytes(1, 'its stack', 'stackSizeMb')
}, {
  additionalProperties: false,
  description: 'the delivery thread\'s memory limits in MB, past which it ends alone and is started again: { maxOldGenerationSizeMb?, maxYoungGenerationSizeMb?, stackSizeMb? }'
})

/** The delivery thread's engine limits, in MB. */
export type ThreadLimits = Required<Static<typeof ThreadLimitsSchema>>

/** The `webhooks` plugin option; the service's WEBHOOK_* settings map onto it (service/config/webhooks.ts). */
export const WebhooksOptionsSchema = Type.Object({
  endpoints: Type.Array(EndpointSchema, { minItems: 1, description: 'a non-empty array of endpoints {name, url, secrets, events}' }),
  retrySchedule: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }), {
    minItems: 1, description: 'a non-empty array of waits in ms after each failed attempt (default Standard Webhooks\' table)'
  })),
  timeout: Type.Optional(Type.Integer({ minimum: 1, description: `the longest attempt in ms (default ${DEFAULT_WEBHOOK_TIMEOUT})` })),
  allowedNetworks: Type.Optional(Type.Array(Type.String(), {
    description: 'CIDRs (e.g. 127.0.0.0/8) reachable although private or loopback'
  })),
  disableAfter: Type.Optional(Type.Integer({ minimum: 1, description: 'ms without a successful delivery after which an endpoint is disabled (default 5 days)' })),
  retention: Type.Optional(Type.Integer({ minimum: 1, description: 'ms that finished events are kept (default 7 days)' })),
  drainTimeout: Type.Optional(Type.Integer({ minimum: 0, description: 'ms that attempts in flight get to finish when the app closes (default: timeout)' })),
  delivery: Type.Optional(Type.Enum(WEBHOOK_DELIVERY_PLACES, {
    description: `where this app delivers: ${WEBHOOK_DELIVERY_PLACES.join(', ')} (default thread; the memory store or a store object deliver in-process, ` +
      'and so does a pg.Pool unless delivery is thread, which then runs on a pool of its own made from the pool\'s settings)'
  })),
  threadResourceLimits: Type.Optional(ThreadLimitsSchema)
}, {
  additionalProperties: false,
  description: 'webhook endpoints and delivery settings {endpoints, retrySchedule, timeout, allowedNetworks, disableAfter, retention, drainTimeout, delivery, threadResourceLimits}'
})

export type WebhooksOptions = Static<typeof WebhooksOptionsSchema>
