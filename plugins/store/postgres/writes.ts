import { revisionSql } from './outbox.js'
import { FENCE_MARK } from './schema-version.js'
import type { outboxTables } from './outbox.js'

type Tables = Pick<ReturnType<typeof outboxTables>, 'events' | 'deliveries'>

/** What a one-plant write (an update, a delete with a precondition) came to, in the statement that made it. */
export interface OneWriteRow {
  /** The plant's revision after the write (an update's), when the table keeps revisions. */
  revision: bigint | null
  written: boolean
  /** The plant was there when the statement began: not written, the precondition failed. */
  found: boolean
}

/**
 * A statement of one plant's write `w` (a data-modifying CTE on the plants table `plants`, $1 its
 * id), with the write's event when `events` is given ($from on: the message id, the payload, the
 * commit time, the endpoints, the trace context), all in one statement and so one transaction: the
 * event is written only with the row. It answers whether the row was written, and whether it was
 * there (the statement's snapshot) for a write it did not make.
 */
function oneWriteSql (plants: string, write: string, type: 'plant.updated' | 'plant.deleted', events: Tables | undefined, from: number) {
  const event = events === undefined
    ? ''
    : `,
  ev AS (INSERT INTO ${events.events} (message_id, type, payload, created_at, trace_context)
    SELECT $${from}, '${type}', $${from + 1}, $${from + 2}, $${from + 4} FROM w RETURNING seq),
  dl AS (INSERT INTO ${events.deliveries} (seq, endpoint, state, attempts, due_at) SELECT ev.seq, e.name, 'pending', 0, $${from + 2}
    FROM ev CROSS JOIN unnest($${from + 3}::text[]) AS e(name))`
  return `${FENCE_MARK}WITH w AS (${write})${event}
  SELECT (SELECT revision FROM w) AS revision, EXISTS (SELECT 1 FROM w) AS written, EXISTS (SELECT 1 FROM ${plants} WHERE id = $1) AS found`
}

// A revision given as text: compared as the column's text, so no If-Match can make a cast fail. Without a column, none matches.
const revisionIn = (revisions: boolean, parameter: string) => `${revisions ? 'revision::text' : 'NULL::text'} = ANY(${parameter}::text[])`

/** A delete under a precondition: $1 the id, $2 the revisions it may delete. */
export const conditionalDeleteSql = (plants: string, revisions: boolean, events: Tables | undefined) => oneWriteSql(plants,
  `DELETE FROM ${plants} WHERE id = $1 AND ${revisionIn(revisions, '$2')} RETURNING ${revisionSql(revisions)}`, 'plant.deleted', events, 3)

/**
 * The updates of one turn of the loop as one statement, each a compare-and-set, in one round trip
 * and one WAL flush (as the creates' batch INSERT): $1 the ids (distinct, ascending), $2 the names,
 * $3 the tags, $4 a JSON array with each update's revisions (an array) or null for any. The rows
 * are locked in id order first, so that two batches never wait for each other in a cycle; an
 * update racing another of the same revision waits for its row lock, then finds another revision.
 * With `events`, each update written gets its plant.updated event in the same statement: $5 the
 * commit time, $6 JSON arrays of the message ids, $7 of the payloads, $8 of the trace contexts
 * (or NULL), $9 the endpoints. One row per id: its revision once written, whether it was written,
 * and whether it was there once locked (a plant another transaction deleted meanwhile is not: its
 * update is not-found, never a failed precondition).
 */
export function updateBatchSql (plants: string, revisions: boolean, events: Tables | undefined, nowait: boolean) {
  const event = events === undefined
    ? ''
    : `,
  ev AS (INSERT INTO ${events.events} (message_id, type, payload, created_at, trace_context)
    SELECT e.message_id, 'plant.updated', e.payload, $5, e.trace_context FROM w
    JOIN ROWS FROM (unnest($1::int8[]), json_array_elements_text($6::json), json_array_elements_text($7::json), json_array_elements_text($8::json))
      AS e(id, message_id, payload, trace_context) ON e.id = w.id
    ORDER BY w.id RETURNING seq),
  dl AS (INSERT INTO ${events.deliveries} (seq, endpoint, state, attempts, due_at) SELECT ev.seq, d.name, 'pending', 0, $5
    FROM ev CROSS JOIN unnest($9::text[]) AS d(name))`
  const current = revisions ? 'p.revision::text' : 'NULL::text'
  return `${FENCE_MARK}WITH i AS (
    SELECT * FROM ROWS FROM (unnest($1::int8[]), unnest($2::text[]), unnest($3::text[]), json_array_elements($4::json)) AS i(id, name, tag, if_revisions)),
  locked AS (SELECT id FROM ${plants} WHERE id = ANY($1::int8[]) ORDER BY id FOR UPDATE${nowait ? ' NOWAIT' : ''}),
  w AS (UPDATE ${plants} p SET name = i.name, tag = i.tag${revisions ? ', revision = p.revision + 1' : ''} FROM i
    WHERE p.id = i.id AND p.id IN (SELECT id FROM locked)
      AND CASE WHEN json_typeof(i.if_revisions) = 'null' THEN true ELSE ${current} IN (SELECT json_array_elements_text(i.if_revisions)) END
    RETURNING p.id, ${revisions ? 'p.revision' : 'NULL::int8 AS revision'})${event}
  SELECT i.id, w.revision, w.id IS NOT NULL AS written, i.id IN (SELECT id FROM locked) AS found
    FROM i LEFT JOIN w ON w.id = i.id`
}
