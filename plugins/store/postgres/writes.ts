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

/**
 * An update, a compare-and-set: $1 the id, $2 the name, $3 the tag, $4 the revisions it may replace
 * (NULL: any). Two racing with one revision: the second waits for the first's row lock, then finds
 * the row at another revision, and writes nothing.
 */
export const updateSql = (plants: string, revisions: boolean, events: Tables | undefined) => oneWriteSql(plants,
  `UPDATE ${plants} SET name = $2, tag = $3${revisions ? ', revision = revision + 1' : ''}
    WHERE id = $1 AND ($4::text[] IS NULL OR ${revisionIn(revisions, '$4')}) RETURNING ${revisionSql(revisions)}`, 'plant.updated', events, 5)

/** A delete under a precondition: $1 the id, $2 the revisions it may delete. */
export const conditionalDeleteSql = (plants: string, revisions: boolean, events: Tables | undefined) => oneWriteSql(plants,
  `DELETE FROM ${plants} WHERE id = $1 AND ${revisionIn(revisions, '$2')} RETURNING ${revisionSql(revisions)}`, 'plant.deleted', events, 3)
