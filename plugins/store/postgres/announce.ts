import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'

// Instances that share a database tell each other of new events with NOTIFY: an instance that
// writes events and delivers none (delivery 'off') announces its commits, and every delivering
// instance listens, so that an event leaves within milliseconds, not at the next poll. Best effort:
// a notification lost (a listener reconnecting, a failed NOTIFY) leaves its events to the poll.

// A stream of commits is announced once per this period: the first at once, the rest at its end.
export const ANNOUNCE_GAP_MS = 5
// A listening connection lost (a server restart, a failover, a session ended) is opened again after
// these waits, the last repeated for as long as it takes. Capped at a second: a session ended as it
// connects, time after time (a kill storm), once backed off to 5 s, so that the listener was still
// away 5 s after the last kill; the poll carries delivery meanwhile, and a try a second costs little.
export const RELISTEN_MS = [50, 100, 250, 500, 1000]

// The listening session is asked every checkMs whether it is still there: a link lost without a
// word (a failover behind an address, a NAT's idle timeout) ends no socket; an answer later than
// answerMs counts as lost too (as does a LISTEN that slow).
export const SESSION_CHECKS = { checkMs: 30_000, answerMs: 5000 }

/**
 * The channel of an outbox: from its plants table's name, hashed to fit PostgreSQL's 63 bytes. A
 * channel is the database's own; the schema is left out, for it may not be known yet when the
 * outbox opens (the server down), and two instances must agree: tables of one name in two
 * schemas of one database only wake each other's delivery for nothing.
 */
export const channelOf = (plantsTable: string) => `plant_store_webhooks_${createHash('sha256').update(plantsTable).digest('hex').slice(0, 32)}`

/** A NOTIFY in a transaction of its own, without waiting for its commit's fsync: a lost one costs only a poll's wait. */
export const notifySql = (channel: string) => `BEGIN; SET LOCAL synchronous_commit = off; NOTIFY ${pg.escapeIdentifier(channel)}; COMMIT`

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

/** A statement that fails unless answered within `ms` (pg's own query_timeout, which its types leave out). */
const answeredWithin = (text: string, ms: number) => ({ text, query_timeout: ms }) as pg.QueryConfig

/** Resolves once `end` does (the session lost, or the listener stopped); throws when a check goes unanswered. */
async function heldUntilEnd (held: pg.PoolClient, end: Promise<void>, checks: typeof SESSION_CHECKS): Promise<void> {
  // for (;;), not a loop with a condition: V8 counts the unreachable end of such a loop as a line never run.
  for (;;) {
    if (await Promise.race([end, sleep(checks.checkMs, true, { ref: false })]) !== true) return
    await held.query(answeredWithin('SELECT 1', checks.answerMs))
  }
}

/**
 * Listens on `channel` on a connection of its own (taken from `connect` and held), calling `heard`
 * for each notification, and once each time it starts listening (what was announced meanwhile); a
 * connection lost, or silent for `checks.answerMs` when asked, is replaced after RELISTEN_MS.
 * Returns a function that stops it: the connection is given back (to be closed) at once, or, while
 * one is being opened, as it comes (a pool's end waits for it).
 */
export function listen (connect: () => Promise<pg.PoolClient>, channel: string, heard: () => void, checks = SESSION_CHECKS): () => Promise<void> {
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
        await held.query(answeredWithin(`LISTEN ${pg.escapeIdentifier(channel)}`, checks.answerMs))
        failures = 0
        heard()
        await heldUntilEnd(held, Promise.race([lost, stopped]), checks)
      } catch {
        // Not reachable now: tried again below.
      }
      // Ended with its session, and its LISTEN with it: never handed to another caller.
      client?.release(true)
      // Cut short by a stop; its timer left to run out on its own, holding nothing open.
      if (!stop.signal.aborted) await Promise.race([sleep(RELISTEN_MS[Math.min(failures++, RELISTEN_MS.length - 1)], undefined, { ref: false }), stopped])
    }
  }
  session()
  return async () => {
    stop.abort()
    // The session's connection is given back on the next turn, unless one is still being opened.
    await sleep(0)
  }
}
