import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { every } from '../http/clock.js'
import type { FeedRow } from '../store/outbox.js'
import { encodeCursor } from './cursor.js'
import type { Feed, Start } from './feed.js'

// A stream reads at most this many events at a time, and waits for its socket to drain between reads.
export const STREAM_READ = 100

/** One event in the text/event-stream format: the cursor as its id, the type, the event's JSON. */
const eventText = (id: string, { position, type, payload }: FeedRow) => `id: ${encodeCursor(id, position)}\nevent: ${type}\ndata: ${payload}\n\n`

/**
 * The open event streams of a feed, and the one heartbeat timer of them all: an idle stream costs
 * no timer of its own but its wait's. A stream whose socket is still full skips the heartbeat.
 */
export class Streams {
  readonly #open = new Set<ServerResponse>()
  #stopBeats: (() => void) | undefined

  constructor (private readonly feed: Feed) {}

  get size (): number {
    return this.#open.size
  }

  #beat () {
    for (const raw of this.#open) if (!raw.writableNeedDrain) raw.write(': heartbeat\n\n')
  }

  /** Streams the changes after `start` to `raw` until its lifetime ends, the client goes, or the app closes; then ends it. */
  async run (raw: ServerResponse, start: Start, release: () => void): Promise<void> {
    const { feed } = this
    const { clock, config } = feed
    const endsAt = clock.now() + config.streamLifetimeMs
    const gone = new AbortController()
    raw.once('close', () => gone.abort())
    const ending = AbortSignal.any([gone.signal, feed.closing.signal])
    this.#open.add(raw)
    this.#stopBeats ??= every(clock, config.heartbeatMs, () => this.#beat())
    const { id, wanted } = start
    let { rows, next } = start
    let more = start.more
    try {
      for (;;) {
        for (const row of rows) {
          // A full socket is waited for before anything more is written or read: a slow reader holds its buffer and one event.
          if (!raw.write(eventText(id, row))) await once(raw, 'drain', { signal: ending }).catch(() => {})
          if (ending.aborted) return
        }
        wanted.after = next
        if (ending.aborted || clock.now() >= endsAt) return
        ;({ rows, next, more } = more ? await feed.readAfter(wanted) : { ...await feed.wait(wanted, endsAt - clock.now(), gone.signal), more: false })
      }
    } finally {
      release()
      this.#open.delete(raw)
      if (this.#open.size === 0) {
        this.#stopBeats?.()
        this.#stopBeats = undefined
      }
      // A client that went: its socket is let go at once, not kept alive for a next request.
      if (gone.signal.aborted) raw.destroy()
      else raw.end()
    }
  }
}
