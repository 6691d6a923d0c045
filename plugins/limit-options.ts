// The options of the two optional limits, apart from their plugins: checking a host's options (or
// the service's configuration) must not load a plugin, nor @fastify/rate-limit, it is not given.
import { Type, type Static } from 'typebox'
import { MAX_TIMER_MS } from '../schemas/index.js'

const threshold = (description: string, maximum?: number) =>
  Type.Optional(Type.Number({ minimum: 0, ...(maximum !== undefined && { maximum }), description }))

export const LoadSheddingOptionsSchema = Type.Object({
  maxEventLoopDelay: threshold('event-loop delay in ms above which requests are refused (0: off)'),
  maxEventLoopUtilization: threshold('event-loop utilization, 0 to 1, above which requests are refused (0: off)', 1),
  maxHeapUsedBytes: threshold('heap use in bytes above which requests are refused (0: off)'),
  retryAfter: Type.Optional(Type.Integer({ minimum: 1, description: 'seconds a refused client is told to wait (Retry-After)' }))
}, { description: 'load shedding thresholds: { maxEventLoopDelay?, maxEventLoopUtilization?, maxHeapUsedBytes?, retryAfter? }' })

export type LoadSheddingOptions = Static<typeof LoadSheddingOptionsSchema>

export const RateLimitOptionsSchema = Type.Object({
  max: Type.Integer({ minimum: 1, description: 'requests allowed per token in each window, a positive integer' }),
  timeWindow: Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS, description: `the window in ms, a positive integer, at most ${MAX_TIMER_MS}` })
}, { description: 'a per-token limit: { max, timeWindow }' })

export type RateLimitOptions = Static<typeof RateLimitOptionsSchema>
