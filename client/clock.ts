/**
 * The time and the timers the client waits on. The shape of the service's Clock
 * (plugins/http/clock.ts), which the client does not import (it loads nothing of the service but
 * protocol.ts): the tests drive both with one fake clock.
 */
export interface ClientClock {
  /** The time now, in ms since the epoch (as Date.now()). */
  now (): number
  /** Runs `fn` after `ms` ms unless the function returned is called first. */
  schedule (fn: () => void, ms: number): () => void
}

/** The real clock. Its timers hold the process open, as a call waiting to retry should. */
export const realClock: ClientClock = {
  now: () => Date.now(),
  schedule: (fn, ms) => {
    const timer = setTimeout(fn, ms)
    return () => clearTimeout(timer)
  }
}

/** The client's internal option, for its tests: not part of the package's API. */
export interface InternalClientOptions {
  clock?: ClientClock
}
