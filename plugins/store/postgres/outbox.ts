import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { systemClock, type Clock } from '../../http/clock.js'
import type {
  AttemptRecord, ClaimedDelivery, FeedPosition, FeedRead, DeliveryState, EndpointState, EventView, OutboxEventType, OutboxOptions, WebhookOutbox
} from '../outbox.js'
import { traced } from '../outbox.js'
import { announcer, channelOf, listen, notifySql } from './announce.js'
import { query } from './connection.js'
import { addTraceContext, addTraceContextSql, FENCE_MARK, fenceFunction, fenceTriggerOn } from './schema-version.js'
import { sqlName, type TableName } from './table.js'
import { feedTablesSql, prunedMarkSql, readFeedSql } from './feed-sql.js'

/** Runs one statement of the store's own (classified failures, int8 as BigInt). */
export type RunQuery = <R extends pg.QueryResultRow>(text: string, values: unknown[], prepared?: boolean) => Promise<pg.QueryResult<R>>

// The most finished events one prune removes: each prune is one short statement.
const PRUNE_BATCH = 250

// PostgreSQL cuts names at 63 bytes, silently: the longest suffix must fit after the table's name.
const LONGEST_SUFFIX = '_webhook_deliveries'
export const MAX_WEBHOOK_TABLE_BYTES = 63 - LONGEST_SUFFIX.length

/** The outbox tables' names, beside the plants table and named after it (cut by PostgreSQL when too long). */
export function outboxNames (plants: TableName) {
  const named = (suffix: string) => sqlName({ schema: plants.schema, table: `${plants.table}_webhook_${suffix}` })
  return { events: named('events'), deliveries: named('deliveries'), attempts: named('attempts'), endpoints: named('endpoints'), feed: named('feed') }
}

/** The outbox tables, beside the plants table and named after it. */
export function outboxTables (plants: TableName) {
  if (Buffer.byteLength(plants.table) > MAX_WEBHOOK_TABLE_BYTES) {
    throw new Error(`plant-store: with webhooks, the PostgreSQL table name may have at most ${MAX_WEBHOOK_TABLE_BYTES} bytes ` +
      `(its outbox tables are named after it, and PostgreSQL would cut theirs): "${plants.table}" is longer; choose a shorter postgres.table`)
  }
  return outboxNames(plants)
}

type Tables = ReturnType<typeof outboxTables>

/** The revision a statement returns: the column's, or none where the table has none (Migrated.revisions). */
export const revisionSql = (revisions: boolean) => revisions ? 'revision' : 'NULL::int8 AS revision'

const webhookTablesSql = ({ events, deliveries, attempts, endpoints }: Tables, plants: TableName) => [
  `CREATE TABLE IF NOT EXISTS ${events} (seq int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id text NOT NULL,
    type text NOT NULL, payload text NOT NULL, created_at timestamptz NOT NULL, trace_context text)`,
  // An events table an earlier release made has no trace_context: the same script upgrades it.
  addTraceContextSql(events),
  `CREATE TABLE IF NOT EXISTS ${deliveries} (seq int8 NOT NULL, endpoint text NOT NULL, state text NOT NULL,
    attempts int4 NOT NULL, due_at timestamptz NOT NULL, claim uuid, PRIMARY KEY (seq, endpoint))`,
  `CREATE INDEX IF NOT EXISTS ${pg.escapeIdentifier(`${plants.table}_webhook_pending`)} ON ${deliveries} (endpoint, due_at) WHERE state = 'pending'`,
  `CREATE INDEX IF NOT EXISTS ${pg.escapeIdentifier(`${plants.table}_webhook_failed`)} ON ${deliveries} (endpoint) WHERE state = 'failed'`,
  `CREATE TABLE IF NOT EXISTS ${attempts} (id int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, seq int8 NOT NULL, endpoint text NOT NULL,
    at timestamptz NOT NULL, outcome text NOT NULL, status int4, error text, duration_ms int4 NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS ${pg.escapeIdentifier(`${plants.table}_webhook_attempts_delivery`)} ON ${attempts} (seq, endpoint)`,
  `CREATE TABLE IF NOT EXISTS ${endpoints} (name text PRIMARY KEY, enabled boolean NOT NULL, disabled_reason text,
    disabled_at timestamptz, last_success_at timestamptz, failing_since timestamptz)`
]

/** Made when webhooks or the feed are first on (under the migration lock): without them nothing of this exists. */
export const createOutboxSql = (tables: Tables, plants: TableName) => [...webhookTablesSql(tables, plants), ...feedTablesSql(tables, plants)]

/** The fence (schema-version.ts) on the outbox tables that plant-store writes: every statement that writes the outbox writes one of them. */
export const outboxFenceSql = ({ deliveries, endpoints }: Tables, plants: TableName) =>
  [...fenceTriggerOn(plants, deliveries), ...fenceTriggerOn(plants, endpoints)]

/**
 * Makes the outbox tables when missing, instances starting together taking turns as for the plants
 * table; the configured endpoints get a state row each (one known already keeps its state).
 */
export async function createOutboxTables (client: pg.PoolClient, tables: Tables, plants: TableName, endpoints: string[]): Promise<void> {
  await client.query('BEGIN')
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    // Made only when missing: CREATE ... IF NOT EXISTS would need the CREATE privilege even then.
    const names = [tables.events, tables.deliveries, tables.attempts, tables.endpoints]
    const { rows: [{ present }] } = await client.query<{ present: boolean }>(
      'SELECT bool_and(to_regclass(name) IS NOT NULL) AS present FROM unnest($1::text[]) AS t(name)', [names])
    if (!present) {
      // The fence where its function is there (a database the release before versions wrote may be served unfenced).
      const { rows: [{ fenced }] } = await query<{ fenced: boolean }>(client, 'SELECT to_regproc($1) IS NOT NULL AS fenced', [fenceFunction(plants)])
      for (const statement of [...createOutboxSql(tables, plants), ...(fenced ? outboxFenceSql(tables, plants) : [])]) await client.query(statement)
    } else {
      await addTraceContext(client, tables.events)
      // Tables an unversioned release made (no migration step ran on them) have no feed yet; only
      // then altered: ALTER TABLE needs the owner even when there is nothing to add.
      const { rows: [{ feed }] } = await client.query<{ feed: boolean }>('SELECT to_regclass($1) IS NOT NULL AS feed', [tables.feed])
      if (!feed) for (const statement of feedTablesSql(tables, plants)) await client.query(statement)
    }
    await client.query(`${FENCE_MARK}INSERT INTO ${tables.endpoints} (name, enabled) SELECT name, true FROM unnest($1::text[]) AS n(name)
      ON CONFLICT (name) DO NOTHING`, [endpoints])
    await client.query('COMMIT')
  } catch (error) {
    // Settled either way: the failure to report is the first one.
    await Promise.allSettled([client.query('ROLLBACK')])
    throw error
  }
}

// Bookkeeping needs no fsync of its own: set for its own transaction only, inside the statement,
// so that a shared pool's sessions are left as they were and no extra round trip is paid.
const NO_FSYNC = 'nofsync AS (SELECT set_config(\'synchronous_commit\', \'off\', true))'

/**
 * The batch INSERT of the store, which with the outbox open writes, in the same statement and so
 * the same transaction, an event for each plant inserted and a delivery per endpoint: data-modifying
 * CTEs always run to completion. Each event's text is written here, from the row inserted: $4, the
 * commit's head (EventPayloads.createdHead), then the plant's id, name and tag as the head's rest
 * says (to_json writes a text as JSON.stringify does), so that the thread that serves HTTP neither
 * makes nor sends it. $5: the message ids, a JSON array of strings in the plants' order
 * (JSON.stringify is native: a text[] literal is escaped element by element in JavaScript); $6
 * the commit time; $7 the endpoints taking plant.created; $8 the trace contexts, a JSON array too,
 * or NULL for none.
 */
export const insertWithEventsSql = (plants: string, { events, deliveries }: Tables, revisions: boolean) => `${FENCE_MARK}WITH ins AS (
    INSERT INTO ${plants} (id, name, tag) SELECT * FROM unnest($1::int8[], $2::text[], $3::text[]) ORDER BY 1
    ON CONFLICT (id) DO NOTHING RETURNING id, name, tag, ${revisionSql(revisions)}),
  ev AS (INSERT INTO ${events} (message_id, type, payload, created_at, trace_context)
    SELECT p.message_id, 'plant.created',
      $4::text || ins.id::text || ',"name":' || to_json(ins.name)::text || coalesce(',"tag":' || to_json(ins.tag)::text, '') || '}',
      $6, p.trace_context FROM ins
    JOIN ROWS FROM (unnest($1::int8[]), json_array_elements_text($5::json), json_array_elements_text($8::json))
      AS p(id, message_id, trace_context) ON p.id = ins.id RETURNING seq),
  dl AS (INSERT INTO ${deliveries} (seq, endpoint, state, attempts, due_at) SELECT ev.seq, e.name, 'pending', 0, $6
    FROM ev CROSS JOIN unnest($7::text[]) AS e(name))
  SELECT id, revision FROM ins`

/** A delete that, when it deleted a plant, writes its plant.deleted event in the same statement. */
export const deleteWithEventSql = (plants: string, { events, deliveries }: Tables) => `${FENCE_MARK}WITH del AS (
    DELETE FROM ${plants} WHERE id = $1 RETURNING id),
  ev AS (INSERT INTO ${events} (message_id, type, payload, created_at, trace_context) SELECT $2, 'plant.deleted', $3, $4, $6 FROM del RETURNING seq),
  dl AS (INSERT INTO ${deliveries} (seq, endpoint, state, attempts, due_at) SELECT ev.seq, e.name, 'pending', 0, $4
    FROM ev CROSS JOIN unnest($5::text[]) AS e(name))
  SELECT id FROM del`

interface ClaimRow {
  seq: bigint,
  endpoint: string,
  attempts: number,
  message_id: string,
  type: OutboxEventType,
  payload: string,
  trace_context: string | null
  xid: string,
  feed_id: string
}

interface EventRow {
  seq: bigint
  message_id: string
  type: OutboxEventType
  payload: string
  created_at: Date
  deliveries: Array<{
    endpoint: string
    state: DeliveryState
    attempts: number
    due_at: string
    history: Array<{ at: string, outcome: AttemptRecord['outcome'], status: number | null, error: string | null, duration_ms: number }>
  }>
}

/** The outbox's statements on its tables. */
function outboxSql ({ events, deliveries, attempts, endpoints: endpointTable, feed }: Tables) {
  const claimSql = `${FENCE_MARK}WITH ${NO_FSYNC},
    want AS (SELECT * FROM unnest($1::text[], $2::int4[]) AS w(endpoint, n)),
    due AS (SELECT d.seq, d.endpoint FROM want JOIN ${endpointTable} en ON en.name = want.endpoint AND en.enabled
      CROSS JOIN LATERAL (SELECT seq, endpoint FROM ${deliveries}
        WHERE endpoint = want.endpoint AND state = 'pending' AND due_at <= $3 ORDER BY due_at LIMIT want.n FOR UPDATE SKIP LOCKED) d),
    claimed AS (UPDATE ${deliveries} t SET claim = $4, due_at = $5 FROM due, nofsync
      WHERE t.seq = due.seq AND t.endpoint = due.endpoint RETURNING t.seq, t.endpoint, t.attempts)
    SELECT c.seq, c.endpoint, c.attempts, e.message_id, e.type, e.payload, e.trace_context, e.xid::text AS xid, (SELECT id::text FROM ${feed}) AS feed_id
    FROM claimed c JOIN ${events} e ON e.seq = c.seq`
  // The batch as one JSON array of rows (see recordRows): JSON.stringify costs the sender far less
  // than an array literal per column, each element escaped. Times are epoch milliseconds.
  const recordSql = `${FENCE_MARK}WITH ${NO_FSYNC},
    r AS (SELECT (x->>0)::int8 AS seq, x->>1 AS endpoint, (x->>2)::uuid AS claim, x->>3 AS state,
      'epoch'::timestamptz + (x->>4)::int8 * interval '1 ms' AS due_at, x->>5 AS outcome, (x->>6)::int4 AS status, x->>7 AS error,
      'epoch'::timestamptz + (x->>8)::int8 * interval '1 ms' AS at, (x->>9)::int4 AS duration_ms FROM json_array_elements($1::json) AS x),
    upd AS (UPDATE ${deliveries} d SET state = r.state, attempts = d.attempts + 1, due_at = r.due_at, claim = NULL FROM r, nofsync
      WHERE d.seq = r.seq AND d.endpoint = r.endpoint AND d.claim = r.claim RETURNING d.seq, d.endpoint),
    done AS (SELECT r.* FROM r JOIN upd ON upd.seq = r.seq AND upd.endpoint = r.endpoint),
    att AS (INSERT INTO ${attempts} (seq, endpoint, at, outcome, status, error, duration_ms)
      SELECT seq, endpoint, at, outcome, status, error, duration_ms FROM done ORDER BY at),
    streak AS (SELECT endpoint, max(at) FILTER (WHERE outcome = 'success') AS ok_at,
      max(at) FILTER (WHERE outcome <> 'success') AS bad_at, min(at) FILTER (WHERE outcome <> 'success') AS bad_first
      FROM done GROUP BY endpoint)
    UPDATE ${endpointTable} e SET last_success_at = coalesce(s.ok_at, e.last_success_at),
      failing_since = CASE WHEN s.ok_at IS NOT NULL AND (s.bad_at IS NULL OR s.ok_at >= s.bad_at) THEN NULL
        ELSE coalesce(e.failing_since, s.bad_first) END
    -- The endpoint rows locked in name order: two instances recording at once never wait for each other in a cycle.
    FROM streak s, (SELECT name FROM ${endpointTable} WHERE name IN (SELECT endpoint FROM done) ORDER BY name FOR UPDATE) l
    WHERE e.name = s.endpoint AND l.name = s.endpoint`
  const releaseSql = `${FENCE_MARK}WITH ${NO_FSYNC}
    UPDATE ${deliveries} d SET claim = NULL, due_at = $4 FROM unnest($1::int8[], $2::text[], $3::uuid[]) AS r(seq, endpoint, claim), nofsync
    WHERE d.seq = r.seq AND d.endpoint = r.endpoint AND d.claim = r.claim`
  const eventsSql = (where: string) => `SELECT e.seq, e.message_id, e.type, e.payload, e.created_at,
    (SELECT coalesce(json_agg(json_build_object('endpoint', d.endpoint, 'state', d.state, 'attempts', d.attempts, 'due_at', d.due_at,
      'history', (SELECT coalesce(json_agg(json_build_object('at', a.at, 'outcome', a.outcome, 'status', a.status, 'error', a.error,
        'duration_ms', a.duration_ms) ORDER BY a.id), '[]') FROM ${attempts} a WHERE a.seq = d.seq AND a.endpoint = d.endpoint))
      ORDER BY d.endpoint), '[]') FROM ${deliveries} d WHERE d.seq = e.seq) AS deliveries
    FROM ${events} e WHERE ${where}`
  const listSql = `${eventsSql('e.seq > $1')} ORDER BY e.seq LIMIT $2`
  const oneSql = eventsSql('e.seq = $1')

  return { claimSql, recordSql, releaseSql, listSql, oneSql, readFeedSql: readFeedSql({ events, feed }) }
}

const viewOf = (row: EventRow): EventView => ({
  seq: row.seq,
  messageId: row.message_id,
  type: row.type,
  payload: row.payload,
  createdAt: row.created_at,
  deliveries: row.deliveries.map((delivery) => ({
    endpoint: delivery.endpoint,
    state: delivery.state,
    attempts: delivery.attempts,
    ...(delivery.state === 'pending' && { dueAt: new Date(delivery.due_at) }),
    history: delivery.history.map((attempt) => ({
      at: new Date(attempt.at),
      outcome: attempt.outcome,
      ...(attempt.status !== null && { status: attempt.status }),
      ...(attempt.error !== null && { error: attempt.error }),
      durationMs: attempt.duration_ms
    }))
  }))
})

/** The rows of recordSql's JSON: [seq (text: an int64), endpoint, claim, state, dueAt ms, outcome, status, error, at ms, durationMs]. */
function recordRows (records: readonly AttemptRecord[]): string {
  const rows = records.map(({ seq, endpoint, claim, next, outcome, status, error, at, durationMs }) =>
    [String(seq), endpoint, claim, next.state, next.state === 'pending' ? next.dueAt.getTime() : 0, outcome, status ?? null, error ?? null, at.getTime(), durationMs])
  return JSON.stringify(rows)
}

// Listening holds one connection of the pool: only where at least this many are left for the rest.
export const MIN_POOL_TO_LISTEN = 3

/** The store's pool, for the outbox's notifications (announce.ts): a connection to hold, and a NOTIFY of its own. */
export interface Notifications {
  plantsTable: string
  /** The most connections of the pool. */
  poolMax: number
  connect: () => Promise<pg.PoolClient>
  /** Runs a statement (announce.ts's NOTIFY) as a simple query on a connection of the pool. */
  notify: (sql: string) => Promise<unknown>
  /** The listeners running, each by its stop: the store stops them as it closes, or its pool's end would wait for their connections. */
  listening: Set<() => Promise<void>>
}

/** The outbox's own statements, on the store's connections. */
class PostgresOutbox implements WebhookOutbox {
  readonly #sql: ReturnType<typeof outboxSql>
  readonly #names: string[]
  readonly #channel: string
  readonly announce: () => void
  readonly listen: ((heard: () => void) => () => Promise<void>) | undefined
  readonly #clock: Clock

  constructor (private readonly tables: Tables, private readonly runQuery: RunQuery, { endpoints, clock = systemClock }: OutboxOptions,
    private readonly notifications: Notifications) {
    this.#clock = clock
    this.#sql = outboxSql(tables)
    this.#names = endpoints.map(({ name }) => name)
    const channel = this.#channel = channelOf(notifications.plantsTable)
    const sql = notifySql(channel)
    this.announce = announcer(() => notifications.notify(sql))
    // A pool too small to spare a connection for good: the delivery finds events at its poll.
    this.listen = notifications.poolMax >= MIN_POOL_TO_LISTEN ? this.#listen : undefined
  }

  readonly #listen = (heard: () => void) => {
    const { listening } = this.notifications
    const stopListening = listen(this.notifications.connect, this.#channel, heard)
    const stop = async () => {
      listening.delete(stop)
      await stopListening()
    }
    listening.add(stop)
    return stop
  }

  async claim (wants: Parameters<WebhookOutbox['claim']>[0], leaseMs: number) {
    const now = this.#clock.now()
    // One claim id for the whole call: a result is written under it and its delivery's key.
    const claim = randomUUID()
    const { rows } = await this.runQuery<ClaimRow>(
      this.#sql.claimSql, [wants.map(({ endpoint }) => endpoint), wants.map(({ limit }) => limit), new Date(now), claim, new Date(now + leaseMs)])
    return rows.map((row): ClaimedDelivery => ({
      seq: row.seq,
      messageId: row.message_id,
      type: row.type,
      endpoint: row.endpoint,
      payload: row.payload,
      attempts: row.attempts,
      claim,
      ...traced(row.trace_context),
      feed: { id: row.feed_id, position: { xid: BigInt(row.xid), seq: row.seq } }
    }))
  }

  async record (records: readonly AttemptRecord[]) {
    await this.runQuery(this.#sql.recordSql, [recordRows(records)])
  }

  async release (claims: Parameters<WebhookOutbox['release']>[0]) {
    await this.runQuery(this.#sql.releaseSql, [claims.map(({ seq }) => seq), claims.map(({ endpoint }) => endpoint), claims.map(({ claim }) => claim), new Date(this.#clock.now())])
  }

  async endpoints () {
    const { rows } = await this.runQuery<{
      name: string, enabled: boolean, disabled_reason: string | null, disabled_at: Date | null, last_success_at: Date | null, failing_since: Date | null
    }>(`SELECT * FROM ${this.tables.endpoints} ORDER BY name`, [])
    return rows.map((row): EndpointState => ({
      name: row.name,
      enabled: row.enabled,
      ...(row.disabled_reason !== null && { disabledReason: row.disabled_reason }),
      ...(row.disabled_at !== null && { disabledAt: row.disabled_at }),
      ...(row.last_success_at !== null && { lastSuccessAt: row.last_success_at }),
      ...(row.failing_since !== null && { failingSince: row.failing_since })
    }))
  }

  async setEnabled (endpoint: string, enabled: boolean, reason?: string) {
    const { rowCount } = await this.runQuery(`${FENCE_MARK}UPDATE ${this.tables.endpoints} SET enabled = $2, disabled_reason = $3, disabled_at = $4,
      failing_since = CASE WHEN $2 THEN NULL ELSE failing_since END WHERE name = $1`,
    [endpoint, enabled, enabled ? null : reason ?? null, enabled ? null : new Date(this.#clock.now())])
    return rowCount === 1
  }

  async events ({ after, limit }: Parameters<WebhookOutbox['events']>[0]) {
    const { rows } = await this.runQuery<EventRow>(this.#sql.listSql, [after ?? -(2n ** 63n), limit])
    return rows.map(viewOf)
  }

  async event (seq: bigint) {
    const { rows: [row] } = await this.runQuery<EventRow>(this.#sql.oneSql, [seq])
    return row && viewOf(row)
  }

  async redeliver (seq: bigint, endpoint: string | undefined, attemptsSoFar: number) {
    const { rowCount } = await this.runQuery(`${FENCE_MARK}UPDATE ${this.tables.deliveries} SET state = 'pending', attempts = $3, due_at = $4, claim = NULL
      WHERE seq = $1 AND ($2::text IS NULL OR endpoint = $2)`, [seq, endpoint ?? null, attemptsSoFar, new Date(this.#clock.now())])
    return Number(rowCount)
  }

  async stats () {
    const { rows } = await this.runQuery<{ endpoint: string, pending: number, failed: number, oldest: Date | null }>(`SELECT n.name AS endpoint,
      (SELECT count(*)::int4 FROM ${this.tables.deliveries} d WHERE d.endpoint = n.name AND d.state = 'pending') AS pending,
      (SELECT count(*)::int4 FROM ${this.tables.deliveries} d WHERE d.endpoint = n.name AND d.state = 'failed') AS failed,
      (SELECT min(e.created_at) FROM ${this.tables.deliveries} d JOIN ${this.tables.events} e ON e.seq = d.seq WHERE d.endpoint = n.name AND d.state = 'pending') AS oldest
      FROM unnest($1::text[]) AS n(name)`, [this.#names])
    const now = this.#clock.now()
    return rows.map(({ endpoint, pending, failed, oldest }) => ({ endpoint, pending, failed, oldestPendingMs: oldest === null ? 0 : now - oldest.getTime() }))
  }

  async prune (before: Date) {
    const { rowCount } = await this.runQuery(`${FENCE_MARK}WITH doomed AS (SELECT seq, xid FROM ${this.tables.events} e WHERE created_at < $1
        AND NOT EXISTS (SELECT 1 FROM ${this.tables.deliveries} d WHERE d.seq = e.seq AND d.state = 'pending') ORDER BY seq LIMIT $2),
      ${prunedMarkSql(this.tables.feed)},
      a AS (DELETE FROM ${this.tables.attempts} WHERE seq IN (SELECT seq FROM doomed)),
      d AS (DELETE FROM ${this.tables.deliveries} WHERE seq IN (SELECT seq FROM doomed))
      DELETE FROM ${this.tables.events} WHERE seq IN (SELECT seq FROM doomed)`, [before, PRUNE_BATCH])
    return Number(rowCount)
  }

  async readFeed (after: FeedPosition | undefined, limit: number): Promise<FeedRead> {
    const { rows: [row] } = await this.runQuery<FeedReadRow>(this.#sql.readFeedSql, after === undefined ? [null, null, limit] : [String(after.xid), after.seq, limit])
    const pruned = { xid: BigInt(row.pruned_xid), seq: BigInt(row.pruned_seq) }
    return {
      id: row.id,
      pruned,
      head: { xid: BigInt(row.xmin), seq: 0n },
      latest: { xid: BigInt(row.xmax), seq: 0n },
      rows: row.rows.map(([xid, seq, type, payload]) => ({ position: { xid: BigInt(xid), seq: BigInt(seq) }, type, payload }))
    }
  }
}

interface FeedReadRow { id: string, pruned_xid: string, pruned_seq: string, xmin: string, xmax: string, rows: Array<[string, string, OutboxEventType, string]> }

export function postgresOutbox (tables: Tables, runQuery: RunQuery, options: OutboxOptions, notifications: Notifications): WebhookOutbox {
  return new PostgresOutbox(tables, runQuery, options, notifications)
}
