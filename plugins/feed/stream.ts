import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { every } from '../http/clock.js'
import type { FeedPosition, FeedRow } from '../store/outbox.js'
import { comparePositions } from '../store/outbox.js'
import { encodeCursor } from './cursor.js'
import type { Feed, Start } from './feed.js'

// A stream reads at most this many events at a time, and waits for its socket to drain between reads.
export const STREAM_READ = 100

/** One event in the text/event-stream format: the cursor as its id, the type, the event's JSON. */
const eventText = (id: string, { position, type, payload }: FeedRow) => `id: ${encodeCursor(id, position)}\nevent: ${type}\ndata: ${payload}\n\n`

/**
 * An id with no data: per the SSE spec it sets the client's last event ID and dispatches no event,
 * so that a client resumes from where the stream got to even when nothing it wanted came.
 */
const positionText = (id: string, position: FeedPosition) => `id: ${encodeCursor(id, position)}\n\n`

/** What the heartbeat knows of one open stream. */
interface Open {
  /** The position the client's last event ID is at (none yet). */
  told: FeedPosition | undefined
  /** Aborts the stream's wait, if it is in one that may skip rows (a types filter): its position comes out of it. */
  refresh: AbortController | undefined
}

/**
 * The open event streams of a feed, and the one heartbeat timer of them all: an idle stream costs
 * no timer of its own but its wait's. A stream whose socket is still full skips the heartbeat.
 */
export class Streams {
  readonly #open = new Map<ServerResponse, Open>()
  #stopBeats: (() => void) | undefined

  constructor (private readonly feed: Feed) {}

  get size (): number {
    return this.#open.size
  }

  #beat () {
    for (const [raw, open] of this.#open) {
      if (raw.writableNeedDrain) continue
      raw.write(': heartbeat\n\n')
      // A filtered stream's wait moves on past the rows it skips: ended, it tells the stream where it got to.
      open.refresh?.abort()
    }
  }

  /**
   * Streams the changes after `start` to `raw` until its lifetime ends, the client goes (`gone`:
   * aborted once the response closed, also before this is called), or the app closes; then ends it.
   */
  async run (raw: ServerResponse, start: Start, release: () => void, gone: AbortSignal): Promise<void> {
    const { feed } = this
    const { clock, config } = feed
    const endsAt = clock.now() + config.streamLifetimeMs
    const ending = AbortSignal.any([gone, feed.closing.signal])
    const { id, wanted } = start
    let { rows, next } = start
    let more = start.more
    const open: Open = { told: undefined, refresh: undefined }
    this.#open.set(raw, open)
    this.#stopBeats ??= every(clock, config.heartbeatMs, () => this.#beat())
    /** Tells the client the stream's position, if it moved past what its last event ID says. */
    const tell = (position: FeedPosition) => {
      if ((open.told !== undefined && comparePositions(position, open.told) === 0) || raw.writableNeedDrain) return
      raw.write(positionText(id, position))
      open.told = position
    }
    /**
     * Waits for a full socket to drain, at most until the stream's lifetime ends (a timer only while
     * it waits): true when the lifetime ran out first, a reader that stopped reading.
     */
    const outlived = async () => {
      const lifetime = new AbortController()
      const cancel = clock.schedule(() => lifetime.abort(), endsAt - clock.now())
      try {
        await once(raw, 'drain', { signal: AbortSignal.any([ending, lifetime.signal]) })
      } catch {
        // Ended: the client went, the app closes, or the lifetime ran out.
      } finally {
        cancel()
      }
      return lifetime.signal.aborted
    }
    let stuck = false
    try {
      // Where it starts, unless an event says it: a client that sees none before the end still resumes from here, not from `now` again.
      if (rows.length === 0) tell(next)
      for (;;) {
        for (const row of rows) {
          // A full socket is waited for before anything more is written or read: a slow reader holds its buffer and one event.
          if (!raw.write(eventText(id, row))) stuck = await outlived()
          open.told = row.position
          if (ending.aborted || stuck) return
        }
        wanted.after = next
        if (ending.aborted || clock.now() >= endsAt) return
        if (more) {
          ;({ rows, next, more } = await feed.readAfter(wanted))
          continue
        }
        open.refresh = wanted.types === undefined ? undefined : new AbortController()
        const signal = open.refresh === undefined ? gone : AbortSignal.any([gone, open.refresh.signal])
        ;({ rows, next } = await feed.wait(wanted, endsAt - clock.now(), signal))
        open.refresh = undefined
        more = false
        if (rows.length === 0) tell(next)
      }
    } finally {
      release()
      this.#open.delete(raw)
      if (this.#open.size === 0) {
        this.#stopBeats?.()
        this.#stopBeats = undefined
      }
      if (!gone.aborted && !stuck && !raw.writableNeedDrain) tell(wanted.after)
      // A client that went, or one that stopped reading: its socket is let go at once, not kept alive (nor held full).
      if (gone.aborted || stuck || raw.writableNeedDrain) raw.destroy()
      else raw.end()
    }
  }
}
