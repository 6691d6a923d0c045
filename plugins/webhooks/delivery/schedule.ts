/** Statuses that ask the sender to slow down: the next attempt waits at least BACKOFF_MS. */
const SLOW_DOWN = new Set([429, 502, 503, 504])
export const BACKOFF_MS = 60_000
// A Retry-After further away than this is read as this: an endpoint cannot park an event for months.
const RETRY_AFTER_MAX_MS = 24 * 3_600_000
const JITTER = 0.2

/** The wait after a failed attempt: the schedule's, jittered ±20 %, so that failed endpoints do not retry in lockstep. */
export function jittered (ms: number, random = Math.random): number {
  return Math.round(ms * (1 - JITTER + 2 * JITTER * random()))
}

/** Retry-After as ms from `now`: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs (header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined
  const text = header.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, RETRY_AFTER_MAX_MS)
  const at = Date.parse(text)
  if (Number.isNaN(at)) return undefined
  return Math.min(Math.max(at - now, 0), RETRY_AFTER_MAX_MS)
}

export interface FailedAttempt {
  /** Attempts made so far, this one included. */
  attempts: number
  status?: number
  timedOut: boolean
  retryAfter?: string
}

/**
 * When to try again after a failed attempt, in ms from `now`, or undefined when that was the last
 * (the delivery fails: a dead letter). A timeout, 429, 502, 503 or 504 waits at least BACKOFF_MS,
 * and at least what Retry-After asks.
 */
export function nextWait (schedule: readonly number[], failed: FailedAttempt, now: number, random = Math.random): number | undefined {
  if (failed.attempts > schedule.length) return undefined
  const wait = jittered(schedule[failed.attempts - 1], random)
  if (!failed.timedOut && (failed.status === undefined || !SLOW_DOWN.has(failed.status))) return wait
  return Math.max(wait, BACKOFF_MS, retryAfterMs(failed.retryAfter, now) ?? 0)
}
