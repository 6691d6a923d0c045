import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../schemas/protocol.js'
import type { Clock } from '../http/clock.js'

/**
 * The webhook outbox a store keeps beside its plants. Once a store's outbox is opened,
 * every create it acknowledges has written, in the same transaction (and group commit) as the
 * plant, one event row and one delivery row per endpoint subscribed to its type; a delete that
 * deleted a plant does the same for plant.deleted. A failed create (409, 400, 503) writes none.
 *
 * Deliveries are claimed under a lease: a claim sets a new claim id and pushes the delivery's
 * `dueAt` to the lease's end, so another worker (another instance) takes it over only once the
 * lease has run out; a result is written only while its claim is still the delivery's own.
 * Bookkeeping (claims, results) needs no fsync of its own: losing a mark only sends again.
 */

export type OutboxEventType = WebhookEventType

/** What an attempt came to: the `outcome` label of the attempts metric. */
export const ATTEMPT_OUTCOMES = ['success', 'http_error', 'timeout', 'network', 'blocked', 'gone'] as const
export type AttemptOutcome = typeof ATTEMPT_OUTCOMES[number]

/** pending: to be sent (now or later); delivered: a 2xx came back; failed: a dead letter, after the last attempt. */
export type DeliveryState = 'pending' | 'delivered' | 'failed'

export interface OutboxEndpoint {
  name: string
  events: readonly OutboxEventType[]
}

/** Makes the payload text of an event, once, at its commit; it is stored and sent byte for byte. */
export interface EventPayloads {
  created (plant: { id: bigint, name: string, tag?: string }, at: Date): string
  /**
   * The start of `created`'s texts at `at`, the same for every plant of a commit. The rest is the
   * plant's own: its id's digits, `,"name":` and the name as a JSON string, then `,"tag":` and the
   * tag as a JSON string when it has one, and `}`. A store that writes that rest itself (the
   * PostgreSQL store, in SQL, from the row it inserts) calls this instead of `created`.
   */
  createdHead (at: Date): string
  deleted (id: bigint, at: Date): string
  /** A plant.updated text: the plant as the update stored it. */
  updated (plant: { id: bigint, name: string, tag?: string }, at: Date): string
  /** A new Standard Webhooks message id (msg_...). */
  messageId (): string
}

export interface OutboxOptions {
  /** The configured endpoints; the outbox keeps a state row for each (enabled, failing since...). */
  endpoints: readonly OutboxEndpoint[]
  payloads: EventPayloads
  /** Told after each commit that wrote events, with their type and number (the worker wakes up). */
  committed?: (type: OutboxEventType, count: number) => void
  /**
   * The caller's trace context (a W3C traceparent), read as a create or delete is called and stored
   * with its event, for the delivery attempts to link to; unset, or undefined, stores none.
   */
  traceContext?: () => string | undefined
  /**
   * Another connection to the same database, open while this store is (the delivery thread's),
   * checkpoints its log: a SQLite store then leaves checkpoints to it, so that its commits never
   * copy the log into the database, and fsync it, on the thread that serves HTTP (past 4 MiB, its
   * own timer still truncates the log). Other stores ignore it.
   */
  checkpointedElsewhere?: boolean
  /**
   * The time the outbox stamps events, claims, leases and states with, and measures ages by
   * (default: the system clock): a test's fake clock moves a lease or an age on without waiting.
   */
  clock?: Clock
  /**
   * The change feed is on: every create and delete writes its event row (the feed's), with or
   * without an endpoint taking its type; deliveries are still written only for the endpoints that
   * take it, and prune keeps events for at least the feed's retention (the caller's `before`).
   */
  feed?: boolean
}

/**
 * A place in the change feed, in the order the feed reads events: PostgreSQL's by the writing
 * transaction's id (xid8) then seq, the other stores' by seq alone (xid 0).
 */
export interface FeedPosition {
  xid: bigint
  seq: bigint
}

/** An event as the feed reads it: where it is, its type and the text its webhook body carries. */
export interface FeedRow {
  position: FeedPosition
  type: OutboxEventType
  payload: string
}

/** One read of the feed: its identity and bounds as the rows were read, and the rows after the position asked for. */
export interface FeedRead {
  /** The feed's identity: made with its table, another on another (or a restored) database. */
  id: string
  /** Events at or before this position were pruned: a cursor older than it is gone. */
  pruned: FeedPosition
  /** Every event to come is after this position: where a follower starting now starts. */
  head: FeedPosition
  /** The latest position a cursor of this feed can hold (the head, or on PostgreSQL past events still committing): a cursor past it is of no feed this one wrote. */
  latest: FeedPosition
  /** Events after the position asked for, in feed order; only those that no later commit can precede. */
  rows: FeedRow[]
}

export const comparePositions = (a: FeedPosition, b: FeedPosition): number =>
  a.xid === b.xid ? Number(a.seq > b.seq) - Number(a.seq < b.seq) : Number(a.xid > b.xid) - Number(a.xid < b.xid)

/** One delivery handed to a worker, under its claim. */
export interface ClaimedDelivery {
  /** The event's sequence number: increasing with commit order on one store, a keyset cursor. */
  seq: bigint
  /** The Standard Webhooks webhook-id, the same on every attempt and endpoint. */
  messageId: string
  type: OutboxEventType
  endpoint: string
  payload: string
  /** Attempts made before this one. */
  attempts: number
  claim: string
  /** The trace context stored with the event (OutboxOptions.traceContext), when there is one. */
  traceContext?: string
  /** The event's place in the change feed: the feed's identity and its position (a webhook-cursor header). */
  feed: { id: string, position: FeedPosition }
}

export interface AttemptRecord {
  seq: bigint
  endpoint: string
  claim: string
  outcome: AttemptOutcome
  /** The HTTP status, when one came back. */
  status?: number
  /** A short reason (network error code, timeout...); never a secret. */
  error?: string
  at: Date
  durationMs: number
  /** What becomes of the delivery: tried again at `dueAt`, delivered, or failed for good. */
  next: { state: 'pending', dueAt: Date } | { state: 'delivered' } | { state: 'failed' }
}

export interface EndpointState {
  name: string
  enabled: boolean
  /** Why it was disabled (410, no success for too long, ...), when it is. */
  disabledReason?: string
  disabledAt?: Date
  lastSuccessAt?: Date
  /** The first failure since the last success, when the endpoint is failing. */
  failingSince?: Date
}

export interface AttemptView {
  at: Date
  outcome: AttemptOutcome
  status?: number
  error?: string
  durationMs: number
}

export interface DeliveryView {
  endpoint: string
  state: DeliveryState
  attempts: number
  /** When the next attempt is due, while pending. */
  dueAt?: Date
  history: AttemptView[]
}

export interface EventView {
  seq: bigint
  messageId: string
  type: OutboxEventType
  payload: string
  createdAt: Date
  deliveries: DeliveryView[]
}

export interface EndpointStats {
  endpoint: string
  pending: number
  /** Age in ms of the oldest pending delivery's event, 0 when none. */
  oldestPendingMs: number
  failed: number
}

export interface WebhookOutbox {
  /**
   * Claims, for each endpoint named, up to its limit of deliveries that are pending and due, of
   * enabled endpoints only, oldest due first; each is leased for `leaseMs`.
   */
  claim (wants: ReadonlyArray<{ endpoint: string, limit: number }>, leaseMs: number): Promise<ClaimedDelivery[]>
  /**
   * Writes the results of attempts, each only if its claim still holds. A success clears the
   * endpoint's failingSince and sets lastSuccessAt; a failure sets failingSince if unset.
   */
  record (attempts: readonly AttemptRecord[]): Promise<void>
  /** Hands claimed deliveries back, due at once, for another worker (at shutdown). */
  release (claims: ReadonlyArray<{ seq: bigint, endpoint: string, claim: string }>): Promise<void>
  endpoints (): Promise<EndpointState[]>
  /** Disables (with a reason) or re-enables an endpoint; resolves false for an unknown name. */
  setEnabled (endpoint: string, enabled: boolean, reason?: string): Promise<boolean>
  /** Events in ascending seq order after a cursor, with each delivery and its attempts. */
  events (options: { after?: bigint, limit: number }): Promise<EventView[]>
  event (seq: bigint): Promise<EventView | undefined>
  /**
   * Makes the deliveries of an event (to one endpoint, or all of them) pending and due now, with
   * `attempts` set so that one attempt is made; resolves how many.
   */
  redeliver (seq: bigint, endpoint: string | undefined, attempts: number): Promise<number>
  stats (): Promise<EndpointStats[]>
  /**
   * Removes events whose every delivery is finished (delivered or failed) and older than `before`;
   * resolves how many. With the feed on, the latest position removed is kept as the feed's `pruned`.
   */
  prune (before: Date): Promise<number>
  /** With the feed on: the events after `after` (none: from the oldest kept), at most `limit`. */
  readFeed (after: FeedPosition | undefined, limit: number): Promise<FeedRead>
  /**
   * Tells the delivery of other processes on the same store (each `listen`ing) that events are due,
   * when the store can: PostgreSQL notifies. An instance that delivers nothing itself calls it after
   * each commit that wrote events. Best effort: what a lost notification would have told, a poll finds.
   */
  announce? (): void
  /** Calls `heard` when another process `announce`s (and once as it starts listening); returns a function that stops it. */
  listen? (heard: () => void): () => Promise<void>
}

/** A store that keeps an outbox: the memory, SQLite and PostgreSQL stores. A host's own store may not. */
export interface OutboxStore {
  /** Called once, before the store's first create; from then on creates and deletes write events. */
  openOutbox (options: OutboxOptions): Promise<WebhookOutbox>
}

/** The endpoints that take each event type, by name: the deliveries an event of that type gets. */
export type Subscribers = Record<OutboxEventType, string[]>

export function subscribersOf (endpoints: readonly OutboxEndpoint[]): Subscribers {
  const entries = WEBHOOK_EVENT_TYPES.map((type) => [type, endpoints.filter(({ events }) => events.includes(type)).map(({ name }) => name)])
  return Object.fromEntries(entries) as Subscribers
}

export const hasOutbox = (store: object): store is OutboxStore =>
  typeof (store as Partial<OutboxStore>).openOutbox === 'function'

/** A claimed delivery's `traceContext`, present only when its event has one (SQL NULL: none). */
export const traced = (traceContext: string | null | undefined): { traceContext?: string } =>
  traceContext == null ? {} : { traceContext }
