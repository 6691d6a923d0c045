import type { Static } from 'typebox'
import type { changesSchemas } from '../schemas/changes.js'
import type { ClientClock } from './clock.js'
import { PlantStoreError, ResponseTimeoutError } from './errors.js'
import { sleep } from './retry.js'

type ChangesSchemas = ReturnType<typeof changesSchemas>
/** One change of the feed: its cursor (opaque text) and its event, the body its webhook carries, ids as bigint. */
export type Change = Static<ChangesSchemas['Change']>
/** One answer of GET /plants/changes. */
export type ChangesPage = Static<ChangesSchemas['ChangesPage']>
/** An event type the feed carries. */
export type ChangeType = Change['event']['type']

/** The longest wait of one request, in seconds (the service's most). */
export const MAX_CHANGES_WAIT = 30

export interface ChangesOptions {
  /** Changes after this cursor (a change's `cursor` as given); `'now'`: from the head on; none: from the oldest change kept. */
  after?: string
  /** Only changes of these types (default: all). */
  types?: readonly ChangeType[]
  /** The most changes a request asks for, 1 to 1000 (the service's default: 100). */
  limit?: number
  /**
   * How long a request with no change to answer waits for one, in seconds: 0 to 30, default 30
   * (a long-poll). With 0 the iteration ends once it has caught up (a page with no change).
   */
  wait?: number
  /** Ends the iteration: the pending request and any back-off wait reject with the signal's reason. */
  signal?: AbortSignal
}

/** The waits between failed requests, in ms: doubling from the first to the longest, jittered. */
export interface Backoff {
  baseDelay: number
  maxDelay: number
}

/** The query of one request, from where the iteration is. */
export function changesQuery (after: string | undefined, { types, limit, wait }: Pick<ChangesOptions, 'types' | 'limit' | 'wait'>): string {
  const query = new URLSearchParams()
  if (after !== undefined) query.set('after', after)
  if (types !== undefined) query.set('types', types.join(','))
  if (limit !== undefined) query.set('limit', String(limit))
  query.set('wait', String(wait))
  return query.toString()
}

/**
 * A failure that a later request may not meet: no whole answer (a network failure, a timeout), a
 * 429 or a 5xx once the client's own retries gave up. A refusal of the request itself (400, 401,
 * 404: no feed, 410: a cursor past what is kept) is thrown: asking again would be refused again.
 */
const isPassing = (error: unknown) =>
  error instanceof PlantStoreError ? error.status === 429 || error.status >= 500 : error instanceof TypeError || error instanceof ResponseTimeoutError

/**
 * The changes from `after` on, one request after another, each resuming from the last page's
 * `next`; after a passing failure it waits (the error's Retry-After, at least the backoff) and asks
 * again from the same cursor, so that no change is missed nor yielded twice.
 */
export async function * followChanges (
  page: (query: string, signal?: AbortSignal) => Promise<ChangesPage>, clock: ClientClock, backoff: Backoff, options: ChangesOptions
): AsyncGenerator<Change, void, undefined> {
  const { signal, wait = MAX_CHANGES_WAIT } = options
  let after = options.after
  let failures = 0
  for (;;) {
    let answer: ChangesPage
    try {
      answer = await page(changesQuery(after, { ...options, wait }), signal)
    } catch (error) {
      if (signal?.aborted === true || !isPassing(error)) throw error
      failures++
      const ceiling = Math.min(backoff.maxDelay, backoff.baseDelay * 2 ** (failures - 1))
      const asked = error instanceof PlantStoreError ? error.retryAfter ?? 0 : 0
      await sleep(Math.max(asked, ceiling / 2 + Math.random() * ceiling / 2), clock, signal)
      continue
    }
    failures = 0
    yield * answer.changes
    // Caught up without waiting: nothing answered, and the cursor did not move.
    if (wait === 0 && answer.changes.length === 0 && answer.next === after) return
    after = answer.next
  }
}
