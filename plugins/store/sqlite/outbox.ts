import { randomUUID } from 'node:crypto'
import type Database from 'better-sqlite3'
import { systemClock, type Clock } from '../../http/clock.js'
import { FEED_ROW, FEED_SCHEMA } from './schema-version.js'
import {
  subscribersOf, traced, type FeedRead, type AttemptOutcome, type AttemptRecord, type ClaimedDelivery, type DeliveryState, type EndpointState, type EventView,
  type OutboxEventType, type OutboxOptions, type WebhookOutbox
} from '../outbox.js'

// Created when webhooks are first configured, at the schema's current version (schema-version.ts's
// steps bring older ones to it): without them, nothing of this exists.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL,
  trace_context TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq INTEGER NOT NULL, endpoint TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, due_at INTEGER NOT NULL, claim TEXT,
  PRIMARY KEY (seq, endpoint)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (endpoint, due_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_failed ON webhook_deliveries (endpoint) WHERE state = 'failed';
CREATE TABLE IF NOT EXISTS webhook_attempts (
  seq INTEGER NOT NULL, endpoint TEXT NOT NULL, at INTEGER NOT NULL, outcome TEXT NOT NULL, status INTEGER, error TEXT, duration_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (seq, endpoint);
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  name TEXT PRIMARY KEY, enabled INTEGER NOT NULL, disabled_reason TEXT, disabled_at INTEGER, last_success_at INTEGER, failing_since INTEGER
) STRICT;
${FEED_SCHEMA}`

// The most finished events one prune removes: each prune is one short transaction.
const PRUNE_BATCH = 250
// The most events one INSERT writes (5 parameters each): a group commit's events take one statement per this many.
const EVENTS_PER_INSERT = 64

interface EventRow { seq: bigint, message_id: string, type: OutboxEventType, payload: string, created_at: bigint, trace_context: string | null }
interface DeliveryRow { seq: bigint, endpoint: string, state: DeliveryState, attempts: bigint, due_at: bigint }
interface AttemptRow { at: bigint, outcome: AttemptOutcome, status: bigint | null, error: string | null, duration_ms: bigint }
interface EndpointRow {
  name: string, enabled: bigint, disabled_reason: string | null, disabled_at: bigint | null, last_success_at: bigint | null, failing_since: bigint | null
}

const dateOf = (ms: bigint) => new Date(Number(ms))

/** How the SQLite store runs a statement: its write guard (the file kept, busy retried) and its translation. */
export interface SqliteRunner {
  /** A durable write (the store's own). */
  write<R> (operation: () => R): Promise<R>
  read<R> (operation: () => R): Promise<R>
  /** Inside a write transaction, first: throws when the file's schema is not this release's (a newer one upgraded it). */
  assertVersion (): void
}

/** The INSERT of `count` events, prepared once per count as a group commit first needs it. */
function eventInserts (db: Database.Database) {
  const prepared: Array<Database.Statement<unknown[]>> = []
  return (count: number) => {
    prepared[count] ??= db.prepare('INSERT INTO webhook_events (message_id, type, payload, created_at, trace_context) VALUES ' +
      Array(count).fill('(?, ?, ?, ?, ?)').join(', '))
    return prepared[count]
  }
}

/** The outbox's statements, prepared once. */
function prepareOutboxStatements (db: Database.Database) {
  const insertEvents = eventInserts(db)
  // The deliveries of the events just written (seq from, to): each INSERT numbers its rows one after another.
  const insertDeliveries = db.prepare<[string, number, bigint, bigint]>(
    'INSERT INTO webhook_deliveries (seq, endpoint, state, attempts, due_at) SELECT seq, ?, \'pending\', 0, ? FROM webhook_events WHERE seq BETWEEN ? AND ?')

  // Rows as arrays (raw): no object made per row of a batch.
  const claimDue = db.prepare<[{ claim: string, leasedUntil: number, endpoint: string, now: number, limit: number }], [seq: bigint, attempts: bigint]>(`
    UPDATE webhook_deliveries SET claim = @claim, due_at = @leasedUntil
    WHERE endpoint = @endpoint AND seq IN (
      SELECT seq FROM webhook_deliveries WHERE endpoint = @endpoint AND state = 'pending' AND due_at <= @now ORDER BY due_at LIMIT @limit)
    AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE name = @endpoint AND enabled = 1)
    RETURNING seq, attempts`).raw(true)
  // The events of a claimed batch in one statement: their seqs as a JSON array.
  const eventsOf = db.prepare<[string], [seq: bigint, messageId: string, type: OutboxEventType, payload: string, traceContext: string | null]>(
    'SELECT seq, message_id, type, payload, trace_context FROM webhook_events WHERE seq IN (SELECT value FROM json_each(?))').raw(true)
  const eventBySeq = db.prepare<[bigint], EventRow>('SELECT * FROM webhook_events WHERE seq = ?')
  // Prepared once: a bookkeeping transaction sets them around itself.
  const syncNormal = db.prepare('PRAGMA synchronous = NORMAL')
  const syncFull = db.prepare('PRAGMA synchronous = FULL')
  const settle = db.prepare<[string, number, bigint, string, string]>(
    'UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, due_at = ?, claim = NULL WHERE seq = ? AND endpoint = ? AND claim = ?')
  const insertAttempt = db.prepare<[bigint, string, number, string, number | null, string | null, number]>(
    'INSERT INTO webhook_attempts (seq, endpoint, at, outcome, status, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
  const succeeded = db.prepare<[number, string]>('UPDATE webhook_endpoints SET last_success_at = ?, failing_since = NULL WHERE name = ?')
  const failedOnce = db.prepare<[number, string]>('UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?) WHERE name = ?')
  const releaseOne = db.prepare<[number, bigint, string, string]>(
    'UPDATE webhook_deliveries SET claim = NULL, due_at = ? WHERE seq = ? AND endpoint = ? AND claim = ?')
  const allEndpoints = db.prepare<[], EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY name')
  const enable = db.prepare<[number, string | null, number | null, number, string]>(`UPDATE webhook_endpoints
    SET enabled = ?, disabled_reason = ?, disabled_at = ?, failing_since = CASE WHEN ? THEN NULL ELSE failing_since END WHERE name = ?`)
  const eventsAfter = db.prepare<[bigint, number], EventRow>('SELECT * FROM webhook_events WHERE seq > ? ORDER BY seq LIMIT ?')
  const deliveriesOf = db.prepare<[bigint], DeliveryRow>('SELECT * FROM webhook_deliveries WHERE seq = ? ORDER BY endpoint')
  const attemptsOf = db.prepare<[bigint, string], AttemptRow>('SELECT * FROM webhook_attempts WHERE seq = ? AND endpoint = ? ORDER BY rowid')
  const redeliverSql = db.prepare<[{ attempts: number, now: number, seq: bigint, endpoint: string | null }]>(`UPDATE webhook_deliveries
    SET state = 'pending', attempts = @attempts, due_at = @now, claim = NULL WHERE seq = @seq AND (@endpoint IS NULL OR endpoint = @endpoint)`)
  const pendingStats = db.prepare<[], { endpoint: string, pending: bigint, oldest: bigint }>(`
    SELECT d.endpoint, count(*) AS pending, min(e.created_at) AS oldest
    FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.seq WHERE d.state = 'pending' GROUP BY d.endpoint`)
  const failedStats = db.prepare<[], { endpoint: string, failed: bigint }>(
    'SELECT endpoint, count(*) AS failed FROM webhook_deliveries WHERE state = \'failed\' GROUP BY endpoint')
  const finished = db.prepare<[number, number], { seq: bigint }>(`SELECT seq FROM webhook_events e WHERE created_at < ?
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.seq = e.seq AND d.state = 'pending') ORDER BY seq LIMIT ?`)
  const removeFrom = ['webhook_attempts', 'webhook_deliveries', 'webhook_events'].map((table) =>
    db.prepare<[bigint]>(`DELETE FROM ${table} WHERE seq = ?`))
  const prunedTo = db.prepare<[bigint]>('UPDATE webhook_feed SET pruned = max(pruned, ?)')
  const feedRows = db.prepare<[bigint, number], [seq: bigint, type: OutboxEventType, payload: string]>(
    'SELECT seq, type, payload FROM webhook_events WHERE seq > ? ORDER BY seq LIMIT ?').raw(true)
  const feedState = db.prepare<[], { id: string, pruned: bigint, head: bigint }>(
    'SELECT id, pruned, coalesce((SELECT seq FROM sqlite_sequence WHERE name = \'webhook_events\'), 0) AS head FROM webhook_feed')
  return { prunedTo, feedRows, feedState, insertEvents, insertDeliveries, claimDue, eventsOf, eventBySeq, syncNormal, syncFull, settle, insertAttempt, succeeded, failedOnce, releaseOne, allEndpoints, enable, eventsAfter, deliveriesOf, attemptsOf, redeliverSql, pendingStats, failedStats, finished, removeFrom }
}

type OutboxStatements = ReturnType<typeof prepareOutboxStatements>

const viewOf = ({ deliveriesOf, attemptsOf }: OutboxStatements, event: EventRow): EventView => ({
  seq: event.seq,
  messageId: event.message_id,
  type: event.type,
  payload: event.payload,
  createdAt: new Date(Number(event.created_at)),
  deliveries: deliveriesOf.all(event.seq).map((delivery) => ({
    endpoint: delivery.endpoint,
    state: delivery.state,
    attempts: Number(delivery.attempts),
    ...(delivery.state === 'pending' && { dueAt: new Date(Number(delivery.due_at)) }),
    history: attemptsOf.all(event.seq, delivery.endpoint).map((attempt) => ({
      at: new Date(Number(attempt.at)),
      outcome: attempt.outcome,
      ...(attempt.status !== null && { status: Number(attempt.status) }),
      ...(attempt.error !== null && { error: attempt.error }),
      durationMs: Number(attempt.duration_ms)
    }))
  }))
})

/** The outbox as the worker and the admin routes use it: bookkeeping and reads, on the store's guard. */
class SqliteOutbox implements WebhookOutbox {
  readonly #s: OutboxStatements
  readonly #runner: SqliteRunner
  readonly #endpoints: OutboxOptions['endpoints']
  readonly #clock: Clock
  // Made with the file's feed row, never changed: each claimed delivery carries it.
  readonly #feedId: string

  constructor (db: Database.Database, statements: OutboxStatements, runner: SqliteRunner, { endpoints, clock = systemClock }: OutboxOptions) {
    this.#s = statements
    this.#feedId = statements.feedState.get()!.id
    this.#runner = runner
    this.#endpoints = endpoints
    this.#clock = clock
    this.#transaction = db.transaction((work: () => unknown) => work())
  }

  /** A bookkeeping transaction: guarded as the store's writes are, but without an fsync of its own. */
  #bookkeeping<R> (work: () => R): Promise<R> {
    return this.#runner.write(() => {
      this.#s.syncNormal.run()
      try {
        return this.#transaction(() => {
          this.#runner.assertVersion()
          return work()
        }) as R
      } finally {
        this.#s.syncFull.run()
      }
    })
  }

  readonly #transaction: (work: () => unknown) => unknown

  claim = (wants: Parameters<WebhookOutbox['claim']>[0], leaseMs: number) => this.#bookkeeping(() => {
    const now = this.#clock.now()
    const claimed: ClaimedDelivery[] = []
    for (const { endpoint, limit } of wants) {
      const claim = randomUUID()
      const rows = this.#s.claimDue.all({ claim, leasedUntil: now + leaseMs, endpoint, now, limit })
      if (rows.length === 0) continue
      const attempts = new Map(rows)
      for (const [seq, messageId, type, payload, traceContext] of this.#s.eventsOf.all(`[${rows.map(([seq]) => seq).join(',')}]`)) {
        claimed.push({ seq, messageId, type, endpoint, payload, attempts: Number(attempts.get(seq)), claim, ...traced(traceContext), feed: { id: this.#feedId, position: { xid: 0n, seq } } })
      }
    }
    return claimed
  })

  record = (attempts: readonly AttemptRecord[]) => this.#bookkeeping(() => {
    // Each endpoint's streak is written once per batch: its last success, or its first failure.
    const streaks = new Map<string, { success?: number, failure?: number }>()
    for (const attempt of attempts) {
      const dueAt = attempt.next.state === 'pending' ? attempt.next.dueAt.getTime() : 0
      if (this.#s.settle.run(attempt.next.state, dueAt, attempt.seq, attempt.endpoint, attempt.claim).changes === 0) continue
      const at = attempt.at.getTime()
      this.#s.insertAttempt.run(attempt.seq, attempt.endpoint, at, attempt.outcome, attempt.status ?? null, attempt.error ?? null, attempt.durationMs)
      const streak = streaks.get(attempt.endpoint) ?? {}
      if (attempt.outcome === 'success') streak.success = Math.max(streak.success ?? at, at)
      else streak.failure = Math.min(streak.failure ?? at, at)
      streaks.set(attempt.endpoint, streak)
    }
    for (const [endpoint, { success, failure }] of streaks) {
      // A failure after the batch's last success starts a streak; one before it does not.
      if (success !== undefined) this.#s.succeeded.run(success, endpoint)
      if (failure !== undefined && (success === undefined || failure > success)) this.#s.failedOnce.run(failure, endpoint)
    }
  })

  release = (claims: Parameters<WebhookOutbox['release']>[0]) => this.#bookkeeping(() => {
    const now = this.#clock.now()
    for (const { seq, endpoint, claim } of claims) this.#s.releaseOne.run(now, seq, endpoint, claim)
  })

  endpoints = () => this.#runner.read(() => this.#s.allEndpoints.all().map((row): EndpointState => ({
    name: row.name,
    enabled: row.enabled === 1n,
    ...(row.disabled_reason !== null && { disabledReason: row.disabled_reason }),
    ...(row.disabled_at !== null && { disabledAt: dateOf(row.disabled_at) }),
    ...(row.last_success_at !== null && { lastSuccessAt: dateOf(row.last_success_at) }),
    ...(row.failing_since !== null && { failingSince: dateOf(row.failing_since) })
  })))

  setEnabled = (endpoint: string, enabled: boolean, reason?: string) => this.#bookkeeping(() =>
    this.#s.enable.run(enabled ? 1 : 0, enabled ? null : reason ?? null, enabled ? null : this.#clock.now(), enabled ? 1 : 0, endpoint).changes > 0)

  events = ({ after, limit }: Parameters<WebhookOutbox['events']>[0]) => this.#runner.read(() => this.#s.eventsAfter.all(after ?? -(2n ** 63n), limit).map((event) => viewOf(this.#s, event)))

  event = (seq: bigint) => this.#runner.read(() => {
    const event = this.#s.eventBySeq.get(seq)
    return event && viewOf(this.#s, event)
  })

  redeliver = (seq: bigint, endpoint: string | undefined, attempts: number) => this.#bookkeeping(() => this.#s.redeliverSql.run({ attempts, now: this.#clock.now(), seq, endpoint: endpoint ?? null }).changes)

  stats = () => this.#runner.read(() => {
    const now = this.#clock.now()
    const pending = new Map(this.#s.pendingStats.all().map((row) => [row.endpoint, row]))
    const failed = new Map(this.#s.failedStats.all().map((row) => [row.endpoint, Number(row.failed)]))
    return this.#endpoints.map(({ name }) => {
      const waiting = pending.get(name)
      return {
        endpoint: name,
        pending: Number(waiting?.pending ?? 0),
        oldestPendingMs: waiting === undefined ? 0 : now - Number(waiting.oldest),
        failed: failed.get(name) ?? 0
      }
    })
  })

  prune = (before: Date) => this.#bookkeeping(() => {
    const seqs = this.#s.finished.all(before.getTime(), PRUNE_BATCH)
    for (const { seq } of seqs) for (const remove of this.#s.removeFrom) remove.run(seq)
    if (seqs.length > 0) this.#s.prunedTo.run(seqs.at(-1)!.seq)
    return seqs.length
  })

  // One read transaction: a prune committed between the state and the rows would leave rows missing past a pruned mark read before it.
  readFeed = (after: FeedRead['head'] | undefined, limit: number) => this.#runner.read(() => this.#transaction((): FeedRead => {
    // The state first: the rows read after it are all at or before the head it tells.
    const { id, pruned, head } = this.#s.feedState.get()!
    const rows = this.#s.feedRows.all(after?.seq ?? pruned, limit).filter(([seq]) => seq <= head)
      .map(([seq, type, payload]) => ({ position: { xid: 0n, seq }, type, payload }))
    const at = (seq: bigint) => ({ xid: 0n, seq })
    return { id, pruned: at(pruned), head: at(head), latest: at(head), rows }
  }) as FeedRead)
}

/**
 * The SQLite store's outbox. The store calls `created` and `deleted` inside the transaction that
 * writes the plant, so both share one commit and one fsync. Bookkeeping (claims, results) runs
 * with synchronous=NORMAL: its commits are not fsynced, but the next plant commit (FULL) syncs the
 * log they sit in, and losing such a mark to a power cut only sends a delivery again. Not OFF: a
 * checkpoint run by a bookkeeping commit would then skip its own fsyncs, and a power cut could
 * lose plants the log had already made durable.
 */
export function openSqliteOutbox (db: Database.Database, runner: SqliteRunner, options: OutboxOptions) {
  const { endpoints, payloads, feed } = options
  runner.assertVersion()
  db.exec(SCHEMA)
  db.prepare<[string]>(FEED_ROW).run(randomUUID())
  const addEndpoint = db.prepare<[string]>('INSERT OR IGNORE INTO webhook_endpoints (name, enabled) VALUES (?, 1)')
  db.transaction(() => { for (const { name } of endpoints) addEndpoint.run(name) })()
  const statements = prepareOutboxStatements(db)
  const to = subscribersOf(endpoints)
  // An event is written when an endpoint takes its type, or for the feed.
  const writes = (type: OutboxEventType) => to[type].length > 0 || feed === true

  /** Writes events of one type and their deliveries, a statement per EVENTS_PER_INSERT events and one per endpoint; inside the caller's transaction. */
  function add (type: OutboxEventType, events: ReadonlyArray<{ payload: string, traceContext: string | undefined }>, at: number): void {
    for (let from = 0; from < events.length; from += EVENTS_PER_INSERT) {
      const chunk = events.slice(from, from + EVENTS_PER_INSERT)
      const values: unknown[] = []
      for (const { payload, traceContext } of chunk) values.push(payloads.messageId(), type, payload, at, traceContext ?? null)
      const last = statements.insertEvents(chunk.length).run(values).lastInsertRowid as bigint
      for (const endpoint of to[type]) statements.insertDeliveries.run(endpoint, at, last - BigInt(chunk.length - 1), last)
    }
  }

  const outbox: WebhookOutbox = new SqliteOutbox(db, statements, runner, options)
  return {
    outbox,
    /**
     * Inside the transaction that inserted `plants`: their events, in that order, when an endpoint
     * takes plant.created; returns how many were written.
     */
    created (plants: ReadonlyArray<{ plant: { id: bigint, name: string, tag?: string }, traceContext: string | undefined }>, at: number): number {
      if (!writes('plant.created') || plants.length === 0) return 0
      const date = new Date(at)
      add('plant.created', plants.map(({ plant, traceContext }) => ({ payload: payloads.created(plant, date), traceContext })), at)
      return plants.length
    },
    deleted (id: bigint, at: number, traceContext?: string): boolean {
      if (!writes('plant.deleted')) return false
      add('plant.deleted', [{ payload: payloads.deleted(id, new Date(at)), traceContext }], at)
      return true
    },
    updated (plant: { id: bigint, name: string, tag?: string }, at: number, traceContext?: string): boolean {
      if (!writes('plant.updated')) return false
      add('plant.updated', [{ payload: payloads.updated(plant, new Date(at)), traceContext }], at)
      return true
    }
  }
}
