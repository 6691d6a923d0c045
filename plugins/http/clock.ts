/** Runs `fn` after `ms` ms unless the function returned is called first. */
export type Schedule = (fn: () => void, ms: number) => () => void

/**
 * The time and the timers of a part that waits: one injected clock for both, so that a test moves
 * them together (test/helpers/fake-clock.ts) instead of waiting for the real time to pass.
 */
export interface Clock {
  /** The time now, in ms since the epoch (as Date.now()). */
  now (): number
  /** A timer that never holds the process open. */
  schedule: Schedule
}

/** The real clock: Date.now() and unreferenced timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => {
    const timer = setTimeout(fn, ms).unref()
    return () => clearTimeout(timer)
  }
}

/** Runs `fn` every `ms` ms on `clock` until the function returned is called. */
export function every (clock: Clock, ms: number, fn: () => void): () => void {
  let cancel = clock.schedule(function tick () {
    cancel = clock.schedule(tick, ms)
    fn()
  }, ms)
  return () => cancel()
}
