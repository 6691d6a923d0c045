import type { Clock } from '../http/clock.js'
import { comparePositions, type FeedPosition, type FeedRow, type OutboxEventType, type WebhookOutbox } from '../store/outbox.js'

/** What a waiter waits for: changes after its position, of its types (all when undefined), at most `limit`. */
export interface Wanted {
  after: FeedPosition
  types: ReadonlySet<OutboxEventType> | undefined
  limit: number
}

/** What a wait ends with: the changes (none when the wait ran out) and the position to go on from. */
export interface Found {
  rows: FeedRow[]
  next: FeedPosition
  /** The store pruned past the position waited after: the changes after it are gone (a 410). */
  gone?: true
}

interface Waiter extends Wanted {
  resolve: (found: Found) => void
  cancel: () => void
}

// A read asks for this many events: every waiter's page fits in it.
const READ_LIMIT = 1000

/**
 * The waiters of one instance and the one reader that serves them all: each wake-up (a commit here,
 * another instance's announcement, the idle poll) is one read of the store from the earliest
 * position waited after, its rows handed to every waiter they match. While anyone waits, the feed
 * is read again every `idleMs` (what a lost announcement, or on PostgreSQL an older transaction
 * still running, held back).
 */
export class FeedReader {
  readonly #waiters = new Set<Waiter>()
  #reading = false
  #again = false
  #wakes = 0
  #stopIdle: (() => void) | undefined

  constructor (private readonly outbox: WebhookOutbox, private readonly clock: Clock, private readonly idleMs: number) {}

  /**
   * Resolves once a change it wants commits, or with none after `ms` or once one of `signals`
   * aborts; `gone` when the store pruned past its position meanwhile. `seen` is `wakes` as the
   * caller read the store before waiting: a wake-up since then reads again at once (it came while
   * this waiter was not there to be served).
   */
  wait (wanted: Wanted, ms: number, signals: readonly AbortSignal[] = [], seen?: number): Promise<Found> {
    return new Promise((resolve) => {
      const end = () => waiter.resolve({ rows: [], next: waiter.after })
      const waiter: Waiter = {
        ...wanted,
        resolve: (found) => {
          this.#waiters.delete(waiter)
          waiter.cancel()
          // Each listener goes with its wait: a signal that outlives many waits (the app's close) holds none of them.
          for (const signal of signals) signal.removeEventListener('abort', end)
          if (this.#waiters.size === 0) this.#idle(false)
          resolve(found)
        },
        cancel: this.clock.schedule(end, ms)
      }
      this.#waiters.add(waiter)
      for (const signal of signals) signal.addEventListener('abort', end, { once: true })
      if (signals.some(({ aborted }) => aborted)) end()
      else if (seen !== undefined && seen !== this.#wakes) this.wake()
      this.#idle(this.#waiters.size > 0)
    })
  }

  /** How many wake-ups there were: taken by a caller before its own read of the store, given to wait(). */
  get wakes (): number {
    return this.#wakes
  }

  /** A commit, here or on another instance: the waiters' changes may be there. */
  wake = (): void => {
    this.#wakes++
    if (this.#waiters.size === 0) return
    if (this.#reading) {
      this.#again = true
      return
    }
    this.#read()
  }

  /** The idle poll: one timer for all waiters, while there are any. */
  #idle (on: boolean) {
    if (on === (this.#stopIdle !== undefined)) return
    if (!on) {
      this.#stopIdle!()
      this.#stopIdle = undefined
      return
    }
    this.#stopIdle = this.clock.schedule(() => {
      this.#stopIdle = undefined
      this.wake()
      this.#idle(true)
    }, this.idleMs)
  }

  async #read (): Promise<void> {
    this.#reading = true
    try {
      const from = [...this.#waiters].map(({ after }) => after).reduce((a, b) => comparePositions(a, b) <= 0 ? a : b)
      const { rows, pruned } = await this.outbox.readFeed(from, READ_LIMIT)
      for (const waiter of this.#waiters) {
        // One that came during the read, from before where it began: the read has not all its changes.
        if (comparePositions(waiter.after, from) < 0) this.#again = true
        else if (comparePositions(waiter.after, pruned) < 0) waiter.resolve({ rows: [], next: waiter.after, gone: true })
        else this.#hand(waiter, rows)
      }
      // A full read may have more behind it.
      if (rows.length === READ_LIMIT) this.#again = true
    } catch {
      // The store did not answer: the idle poll reads again.
    } finally {
      this.#reading = false
    }
    if (this.#again) {
      this.#again = false
      this.wake()
    }
  }

  /** Hands a waiter its changes among `rows`; one that matched none moves on past them and waits on. */
  #hand (waiter: Waiter, rows: FeedRow[]) {
    const found: FeedRow[] = []
    let next = waiter.after
    for (const row of rows) {
      if (comparePositions(row.position, waiter.after) <= 0) continue
      next = row.position
      if (waiter.types === undefined || waiter.types.has(row.type)) found.push(row)
      if (found.length === waiter.limit) break
    }
    if (found.length > 0) waiter.resolve({ rows: found, next })
    else waiter.after = next
  }
}
