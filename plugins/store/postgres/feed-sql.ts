import pg from 'pg'
import type { TableName } from './table.js'

/**
 * The change feed's column and table: each event records the id of the transaction that wrote it
 * (xid8), which the feed reads in order below the oldest transaction still running; one row holds
 * the feed's identity (a new one on another database) and the latest position pruned.
 */
export const feedTablesSql = ({ events, feed }: { events: string, feed: string }, plants: TableName) => [
  `ALTER TABLE ${events} ADD COLUMN IF NOT EXISTS xid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
  `CREATE INDEX IF NOT EXISTS ${pg.escapeIdentifier(`${plants.table}_webhook_feed_order`)} ON ${events} (xid, seq)`,
  `CREATE TABLE IF NOT EXISTS ${feed} (one boolean PRIMARY KEY DEFAULT true CHECK (one), id uuid NOT NULL DEFAULT gen_random_uuid(),
    pruned_xid xid8 NOT NULL DEFAULT '0', pruned_seq int8 NOT NULL DEFAULT 0)`,
  `INSERT INTO ${feed} DEFAULT VALUES ON CONFLICT (one) DO NOTHING`
]

/**
 * One read of the feed: its identity, pruned mark and bounds, and the events after ($1, $2) (NULL: the pruned
 * mark), at most $3, in (xid, seq) order. Only events of transactions older than the oldest one still running
 * (the snapshot's xmin) are read: each of those has committed or never will, and every transaction
 * to come gets a larger id, so an event read past is never followed by one before it. The head is
 * that xmin: what commits from now on is after it. Ids and positions as text: exact.
 */
export const readFeedSql = ({ events, feed }: { events: string, feed: string }) => `WITH s AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin, pg_snapshot_xmax(pg_current_snapshot()) AS xmax)
  SELECT f.id::text AS id, f.pruned_xid::text AS pruned_xid, f.pruned_seq::text AS pruned_seq, s.xmin::text AS xmin, s.xmax::text AS xmax,
    (SELECT coalesce(json_agg(json_build_array(e.xid::text, e.seq::text, e.type, e.payload) ORDER BY e.xid, e.seq), '[]')
      FROM (SELECT xid, seq, type, payload FROM ${events} WHERE (xid, seq) > (coalesce($1::xid8, f.pruned_xid), coalesce($2::int8, f.pruned_seq))
        AND xid < s.xmin
        ORDER BY xid, seq LIMIT $3) e) AS rows
  FROM ${feed} f, s`

/** Beside a prune's removal (its CTE `doomed`, with xid and seq): the latest position removed becomes the feed's pruned mark. */
export const prunedMarkSql = (feed: string) => `f AS (UPDATE ${feed} SET (pruned_xid, pruned_seq) = (m.xid, m.seq)
    FROM (SELECT xid, seq FROM doomed ORDER BY xid DESC, seq DESC LIMIT 1) m WHERE (m.xid, m.seq) > (pruned_xid, pruned_seq))`
