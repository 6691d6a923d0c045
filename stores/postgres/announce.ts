import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'

// Instances that share a database tell each other of new events with NOTIFY: an instance that
// writes events and delivers none (delivery 'off') announces its commits, and every delivering
// instance listens, so that an event leaves within milliseconds, not at the next poll. Best effort:
// a notification lost (a listener reconnecting, a failed NOTIFY) leaves its events to the poll.

// A stream of commits is announced once per this period: the first at once, the rest at its end.
export const ANNOUNCE_GAP_MS = 5
// A listening connection lost (a server restart, a failover, a session ended) is opened again after these waits, the last repeated.
export const RELISTEN_MS = [250, 1000, 5000]

/** The channel of an outbox: from its events table's name, hashed to fit PostgreSQL's 63 bytes whatever the schema and table. */
export const channelOf = (eventsTable: string) => `plant_store_webhooks_${createHash('sha256').update(eventsTable).digest('hex').slice(0, 32)}`

/**
 * Announces on `channel` with `notify`, at most once per ANNOUNCE_GAP_MS: a call within the gap
 * after the last one is sent at its end, so that every commit is followed by a notification sent
 * after it.
 */
export function announcer (notify: () => Promise<unknown>): () => void {
  let gap: NodeJS.Timeout | undefined
  let again = false
  const announce = () => {
    if (gap !== undefined) {
      again = true
      return
    }
    // A NOTIFY that fails is as a notification lost: the listeners' poll finds the events.
    notify().catch(() => {})
    gap = setTimeout(() => {
      gap = undefined
      if (again) {
        again = false
        announce()
      }
    }, ANNOUNCE_GAP_MS).unref()
  }
  return announce
}

/**
 * Listens on `channel` on a connection of its own (taken from `connect` and held), calling `heard`
 * for each notification, and once each time it starts listening (what was announced meanwhile); a
 * connection lost is replaced after RELISTEN_MS. Returns a function that stops it, resolved once
 * the connection is closed (a pool's end waits for it).
 */
export function listen (connect: () => Promise<pg.PoolClient>, channel: string, heard: () => void): () => Promise<void> {
  const stop = new AbortController()
  const stopped = new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }))
  const session = async () => {
    for (let failures = 0; !stop.signal.aborted;) {
      let client: pg.PoolClient | undefined
      try {
        client = await connect()
        const held = client
        const lost = new Promise<void>((resolve) => {
          held.once('error', () => resolve())
          held.once('end', () => resolve())
        })
        held.on('notification', (message) => { if (message.channel === channel) heard() })
        await held.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        failures = 0
        heard()
        await Promise.race([lost, stopped])
      } catch {
        // Not reachable now: tried again below.
      }
      // Ended with its session, and its LISTEN with it: never handed to another caller.
      client?.release(true)
      // Cut short by a stop; its timer left to run out on its own, holding nothing open.
      if (!stop.signal.aborted) await Promise.race([sleep(RELISTEN_MS[Math.min(failures++, RELISTEN_MS.length - 1)], undefined, { ref: false }), stopped])
    }
  }
  const ended = session()
  return async () => {
    stop.abort()
    await ended
  }
}
