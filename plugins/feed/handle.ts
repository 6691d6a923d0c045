import type { Static } from 'typebox'
import { StoreUnavailableError } from '../http/errors.js'
import { parseExactJson } from '../../schemas/exact-json.js'
import { DEFAULT_CHANGES, MAX_CHANGES, MAX_WAIT_SECONDS, type changesSchemas } from '../../schemas/changes.js'
import { WEBHOOK_EVENT_TYPES } from '../../schemas/protocol.js'
import { encodeCursor } from './cursor.js'
import type { Feed } from './feed.js'

/** One change of the feed, as GET /plants/changes and the client's changes() give it: its cursor and its event, ids as bigint. */
export type FeedChange = Static<ReturnType<typeof changesSchemas>['Change']>
type ChangeType = FeedChange['event']['type']

export interface FeedHandleOptions {
  /** Changes after this cursor (a change's `cursor`, also one the HTTP feed gave); `'now'`: from the head on; none: from the oldest change kept. */
  after?: string
  /** Only changes of these types (default: all). */
  types?: readonly ChangeType[]
  /** The most changes read from the store at a time (default 100). */
  limit?: number
  /** Ends the iteration (it returns, at once if it waits). */
  signal?: AbortSignal
}

// A store that did not answer is asked again after these waits (the last repeated), from the same cursor.
export const FEED_RETRY_MS = [100, 500, 1000, 5000]

const offError = () => new Error('plant-store: the change feed is off, or not ready: register plant-store with this handle as its feedHandle ' +
  'option (and the feed on, the default), await the app\'s ready(), and use a store that keeps events (memory, sqlite: or postgres:)')

function checkOptions (types: FeedHandleOptions['types'], limit: number) {
  if (types !== undefined && (types.length === 0 || types.some((type) => !WEBHOOK_EVENT_TYPES.includes(type)))) {
    throw new TypeError(`plant-store: types must be a non-empty list of ${WEBHOOK_EVENT_TYPES.join(', ')}`)
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_CHANGES) throw new RangeError(`plant-store: limit must be an integer from 1 to ${MAX_CHANGES}`)
}

/** Resolves after `ms` on the feed's clock, or at once when `signal` aborts or the app closes. */
function pause (feed: Feed, ms: number, signal: AbortSignal | undefined): Promise<void> {
  const signals = signal === undefined ? [feed.closing.signal] : [signal, feed.closing.signal]
  return new Promise((resolve) => {
    const done = () => {
      cancel()
      for (const one of signals) one.removeEventListener('abort', done)
      resolve()
    }
    const cancel = feed.clock.schedule(done, ms)
    for (const one of signals) one.addEventListener('abort', done, { once: true })
    if (signals.some(({ aborted }) => aborted)) done()
  })
}

/**
 * The change feed in the host's own process: made by `createFeedHandle()`, given to plant-store as
 * its `feedHandle` option, and followed with `changes()`, the same feed GET /plants/changes serves
 * (its cursors are interchangeable with it), without HTTP, auth or the waiters' caps.
 */
export class FeedHandle {
  #feed: Feed | undefined

  /** Called by the feed plugin as it registers: from then on, and until the app closes, changes() follows `feed`. */
  attach (feed: Feed): void {
    this.#feed = feed
  }

  /**
   * Every committed create, update and delete after `after`, in feed order, as an async iterator
   * that waits for the next change; a store that does not answer is asked again from the same
   * cursor, so that no change is missed nor given twice. Ends when `signal` aborts or the app
   * closes; a cursor past what is kept throws FeedCursorGoneError (as 410 over HTTP).
   */
  async * changes ({ after, types, limit = DEFAULT_CHANGES, signal }: FeedHandleOptions = {}): AsyncGenerator<FeedChange, void, undefined> {
    checkOptions(types, limit)
    const feed = this.#feed
    if (feed === undefined || !feed.attached) throw offError()
    let cursor = after
    let failures = 0
    for (;;) {
      if (signal?.aborted === true || feed.closing.signal.aborted) return
      let start
      try {
        start = await feed.start({ after: cursor, limit, types: types?.join(',') })
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error
        await pause(feed, FEED_RETRY_MS[Math.min(failures++, FEED_RETRY_MS.length - 1)], signal)
        continue
      }
      failures = 0
      let { rows, next } = start
      if (rows.length === 0 && !start.more) ({ rows, next } = await feed.wait(start.wanted, MAX_WAIT_SECONDS * 1000, signal, start.seen))
      for (const row of rows) yield { cursor: encodeCursor(start.id, row.position), event: parseExactJson(row.payload) as FeedChange['event'] }
      cursor = encodeCursor(start.id, next)
    }
  }
}

/** A handle on the change feed for the host's own process: pass it as plant-store's `feedHandle` option, then follow `changes()`. */
export const createFeedHandle = (): FeedHandle => new FeedHandle()
