import type { AttemptOutcome } from '../../store/outbox.js'
import type { WebhooksOptions } from '../options-schema.js'
import type { PoolSettings } from './pool-settings.js'

/** What the delivery thread is started with: plain data, copied into the thread. */
export interface DeliveryThreadData {
  /**
   * The store the thread opens a connection of its own to: its URL (sqlite:<path> or postgres://…),
   * or the settings of a host's pg.Pool, which the thread makes a small pool of its own from.
   */
  store: string | { poolSettings: PoolSettings }
  /** The PostgreSQL store's table settings (its pool is the thread's own, and small). */
  postgres?: Record<string, unknown> | undefined
  webhooks: WebhooksOptions
  /** What a traced thread's module (WebhookTracing.thread) sets its tracing up with. */
  tracing?: unknown
}

/** What the thread is started with: the data, and the bell each commit that wrote events rings (doorbell.ts). */
export type ThreadData = DeliveryThreadData & { bell: Int32Array }

export type LogLevel = 'warn' | 'info'

/** The API thread to the delivery thread. */
export type ToThread = { kind: 'pause' } | { kind: 'stop', drainMs: number }

/**
 * The delivery thread to the API thread: attempts for the metrics (by endpoint and outcome, the
 * duration of each in seconds: one group per pair in a message, not one entry per attempt), log
 * lines for its log, and once that it is up (its store and outbox open, its doorbell listened to).
 */
export type FromThread =
  | { kind: 'attempts', attempts: Array<[endpoint: string, outcome: AttemptOutcome, seconds: Float64Array]> }
  | { kind: 'log', level: LogLevel, object: object, message: string }
  | { kind: 'up' }
