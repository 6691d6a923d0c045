import type { Clock } from '../http/clock.js'
import { comparePositions, type FeedPosition, type FeedRead, type FeedRow, type OutboxEventType, type WebhookOutbox } from '../store/outbox.js'
import type { ChangesRequest } from '../../schemas/changes.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { FeedBusyError, FeedCursorGoneError, FeedCursorInvalidError } from './errors.js'
import { FeedReader, type Found, type Wanted } from './reader.js'
import type { FeedConfig } from './settings.js'
import { Streams } from './stream.js'

/** A request's first read: the feed's identity, the changes it wants, and where to go on from. */
export interface Start {
  id: string
  rows: FeedRow[]
  next: FeedPosition
  wanted: Wanted
  /** The read was full: more may be there already. */
  more: boolean
  /** The reader's wake-ups before this read (FeedReader.wait's `seen`). */
  seen: number
}

/** The first read of a request: from its cursor (checked against the feed), from the oldest kept, or at the head. */
async function firstRead (outbox: WebhookOutbox, after: string | undefined, limit: number): Promise<{ read: FeedRead, from: FeedPosition }> {
  if (after === 'now') {
    const read = await outbox.readFeed(undefined, 0)
    return { read, from: read.head }
  }
  if (after === undefined) {
    const read = await outbox.readFeed(undefined, limit)
    return { read, from: read.pruned }
  }
  const cursor = decodeCursor(after)
  if (cursor === undefined) throw new FeedCursorInvalidError()
  const read = await outbox.readFeed(cursor.position, limit)
  if (cursor.id !== read.id || comparePositions(cursor.position, read.pruned) < 0 || comparePositions(cursor.position, read.latest) > 0) {
    throw new FeedCursorGoneError()
  }
  return { read, from: cursor.position }
}

/** The rows of the types wanted (all when undefined). */
const matching = (rows: FeedRow[], types: Wanted['types']) => types === undefined ? rows : rows.filter(({ type }) => types.has(type))

/** The JSON of a change: its cursor and its event's text as stored (exact int64 ids). */
export const changeJson = (id: string, { position, payload }: FeedRow) => `{"cursor":"${encodeCursor(id, position)}","event":${payload}}`

/**
 * The change feed of one plugin instance: the store's outbox (attached once opened, by the feed
 * plugin or the webhooks' own), its shared reader, and the waiters' caps.
 */
export class Feed {
  #outbox: WebhookOutbox | undefined
  #reader: FeedReader | undefined
  #stopListening: (() => Promise<void>) | undefined
  readonly #perToken = new Map<string, number>()
  #held = 0
  /** Aborted as the app closes: waits and streams end. */
  readonly closing = new AbortController()
  readonly streams: Streams = new Streams(this)

  constructor (readonly config: FeedConfig, readonly clock: Clock) {}

  attach (outbox: WebhookOutbox): void {
    this.#outbox = outbox
    this.#reader = new FeedReader(outbox, this.clock, this.config.idleMs)
  }

  /** Told after each commit that wrote events: this instance's waiters, and other instances' (PostgreSQL's NOTIFY). */
  committed = (): void => {
    this.#reader?.wake()
    this.#outbox?.announce?.()
  }

  /** The first read of a request after its cursor (`after`: a cursor, `now`, or none for the oldest kept). */
  async start ({ after, limit, types }: Pick<ChangesRequest, 'after' | 'limit' | 'types'>): Promise<Start> {
    const wanted = types === undefined ? undefined : new Set(types.split(',') as OutboxEventType[])
    const seen = this.#reader!.wakes
    const { read, from } = await firstRead(this.#outbox!, after, limit)
    const next = read.rows.at(-1)?.position ?? from
    const rows = matching(read.rows, wanted)
    return { id: read.id, rows, next, wanted: { after: next, types: wanted, limit }, more: read.rows.length === limit, seen }
  }

  /** A read of what `wanted` wants, at once (a stream catching up). */
  async readAfter (wanted: Wanted): Promise<Found & { more: boolean }> {
    const { rows, pruned } = await this.#outbox!.readFeed(wanted.after, wanted.limit)
    // Pruned past the position meanwhile (a reader far behind, at the retention's edge): what follows it is gone.
    if (comparePositions(wanted.after, pruned) < 0) throw new FeedCursorGoneError()
    return {
      rows: matching(rows, wanted.types),
      next: rows.at(-1)?.position ?? wanted.after,
      more: rows.length === wanted.limit
    }
  }

  /** The answer to GET /plants/changes for `who` (its token or the host's identity): JSON text. */
  async page (query: ChangesRequest, who: string, signal?: AbortSignal): Promise<string> {
    let { id, rows, next, wanted, seen } = await this.start(query)
    const { wait } = query
    if (rows.length === 0 && wait > 0) {
      const release = this.hold(who)
      try {
        ({ rows, next } = await this.wait(wanted, wait * 1000, signal, seen))
      } finally {
        release()
      }
    }
    return `{"changes":[${rows.map((row) => changeJson(id, row)).join(',')}],"next":"${encodeCursor(id, next)}"}`
  }

  /** Takes a place among the waiters and streams, within the caps (past them: FeedBusyError); returns its release. */
  hold (who: string): () => void {
    const mine = this.#perToken.get(who) ?? 0
    if (this.#held >= this.config.maxWaiters || mine >= this.config.maxWaitersPerToken) throw new FeedBusyError()
    this.#held++
    this.#perToken.set(who, mine + 1)
    return () => {
      this.#held--
      const left = this.#perToken.get(who)! - 1
      if (left === 0) this.#perToken.delete(who)
      else this.#perToken.set(who, left)
    }
  }

  /**
   * Waits with the shared reader (listening for other instances' commits from the first wait on),
   * until a change, `ms`, `signal` or the app's close; throws FeedCursorGoneError when the store
   * pruned past the position meanwhile. `seen`: the start's, so that a commit during it is not missed.
   */
  async wait (wanted: Wanted, ms: number, signal?: AbortSignal, seen?: number): Promise<Found> {
    const reader = this.#reader!
    this.#stopListening ??= this.#outbox!.listen?.(reader.wake)
    // The signals as they are, not AbortSignal.any: on Node 20 a combined signal with a listener lives as long as its sources.
    const found = await reader.wait(wanted, ms, signal === undefined ? [this.closing.signal] : [signal, this.closing.signal], seen)
    if (found.gone === true) throw new FeedCursorGoneError()
    return found
  }

  /** Whether the store's outbox is attached (it is once the feed's or the webhooks' plugin opened it). */
  get attached (): boolean {
    return this.#outbox !== undefined
  }

  /** Ends the waits and streams (their answers go out at once) and stops listening. */
  async close (): Promise<void> {
    this.closing.abort()
    await this.#stopListening?.()
  }
}
