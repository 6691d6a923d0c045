import { Type, type Static } from 'typebox'

const DAY_MS = 24 * 60 * 60 * 1000
export const DEFAULT_FEED_RETENTION = 7 * DAY_MS
export const DEFAULT_FEED_MAX_WAITERS = 10_000
export const DEFAULT_FEED_MAX_WAITERS_PER_TOKEN = 100
// While anyone waits, the feed is read at least this often: what a lost announcement held back.
export const FEED_IDLE_READ_MS = 1000
export const DEFAULT_HEARTBEAT_MS = 15_000
export const DEFAULT_STREAM_LIFETIME_MS = 5 * 60_000

export const FeedOptionsSchema = Type.Union([
  Type.Literal(false),
  Type.Object({
    retention: Type.Optional(Type.Integer({ minimum: 1, description: 'ms that events are kept for the feed (default 7 days)' })),
    maxWaiters: Type.Optional(Type.Integer({ minimum: 1, description: 'the most long-polls and event streams at once in this process (default 10000)' })),
    maxWaitersPerToken: Type.Optional(Type.Integer({ minimum: 1, description: 'the most long-polls and event streams at once for one token or identity (default 100)' })),
    heartbeat: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: 'ms between the comment lines that keep an idle event stream open (default 15000)' })),
    streamLifetime: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1, description: 'ms after which an event stream ends, for its client to resume (default 300000)' }))
  }, { additionalProperties: false })
], {
  description: 'false, or the change feed\'s settings {retention, maxWaiters, maxWaitersPerToken, heartbeat, streamLifetime} (default: on, GET /plants/changes)'
})

export type FeedOptions = Static<typeof FeedOptionsSchema>

export interface FeedConfig {
  retention: number
  maxWaiters: number
  maxWaitersPerToken: number
  idleMs: number
  heartbeatMs: number
  streamLifetimeMs: number
}

/** The feed's settings, or undefined when it is off. */
export function resolveFeed (options: FeedOptions | undefined): FeedConfig | undefined {
  if (options === false) return undefined
  return {
    retention: options?.retention ?? DEFAULT_FEED_RETENTION,
    maxWaiters: options?.maxWaiters ?? DEFAULT_FEED_MAX_WAITERS,
    maxWaitersPerToken: options?.maxWaitersPerToken ?? DEFAULT_FEED_MAX_WAITERS_PER_TOKEN,
    idleMs: FEED_IDLE_READ_MS,
    heartbeatMs: options?.heartbeat ?? DEFAULT_HEARTBEAT_MS,
    streamLifetimeMs: options?.streamLifetime ?? DEFAULT_STREAM_LIFETIME_MS
  }
}
