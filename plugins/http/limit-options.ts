// The options of the two optional limits, apart from their plugins: checking a host's options (or
// the service's configuration) must not load a plugin, nor @fastify/rate-limit, it is not given.
import { Type, type Static } from 'typebox'
import { MAX_TIMER_MS } from '../../schemas/index.js'

const threshold = (description: string, maximum?: number) =>
  Type.Optional(Type.Number({ minimum: 0, ...(maximum !== undefined && { maximum }), description }))

export const LoadSheddingOptionsSchema = Type.Object({
  maxEventLoopDelay: threshold('event-loop delay in ms above which requests are refused (0: off)'),
  maxEventLoopUtilization: threshold('event-loop utilization, 0 to 1, above which requests are refused (0: off)', 1),
  maxHeapUsedBytes: threshold('heap use in bytes above which requests are refused (0: off)'),
  retryAfter: Type.Optional(Type.Integer({ minimum: 1, description: 'seconds a refused client is told to wait (Retry-After)' }))
}, { additionalProperties: false, description: 'load shedding thresholds: { maxEventLoopDelay?, maxEventLoopUtilization?, maxHeapUsedBytes?, retryAfter? }' })

export type LoadSheddingOptions = Static<typeof LoadSheddingOptionsSchema>

const timeWindow = Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS, description: `the window in ms, a positive integer, at most ${MAX_TIMER_MS}` })

export const RateLimitOptionsSchema = Type.Object({
  max: Type.Integer({ minimum: 1, description: 'requests allowed per token (or identity) in each window, a positive integer' }),
  timeWindow
}, { additionalProperties: false, description: 'a per-token limit: { max, timeWindow }' })

export type RateLimitOptions = Static<typeof RateLimitOptionsSchema>

/** How many refused tokens a client address may send in a window (the plugin's own tokens only). */
export const DEFAULT_AUTH_FAILURE_LIMIT = { max: 10, timeWindow: 60_000 }

export const AuthFailureLimitSchema = Type.Union([
  Type.Literal(false),
  Type.Object({
    max: Type.Integer({ minimum: 1, description: 'failed authentications allowed per client address in each window, a positive integer' }),
    timeWindow
  }, { additionalProperties: false })
], {
  description: `false, or { max, timeWindow }: refused credentials allowed per client address (default with tokens ${DEFAULT_AUTH_FAILURE_LIMIT.max} per ${DEFAULT_AUTH_FAILURE_LIMIT.timeWindow} ms; with authenticate, none)`
})

/** A number of events allowed in each window of `timeWindow` ms. */
export interface WindowLimit { max: number, timeWindow: number }
