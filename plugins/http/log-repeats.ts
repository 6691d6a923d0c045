import { systemClock, type Schedule } from './clock.js'

export type { Schedule }

/** How often, at most, the log sums up the repeats of an event. */
export const REPEATS_INTERVAL_MS = 1000

/** Sums up `repeated` repeats of the event `key` in one log line; `last` is the last one's detail. */
export type Summarise<Detail> = (key: string, repeated: number, last: Detail) => void

interface Window<Detail> { repeated: number, last: Detail, cancel: () => void }

/**
 * Events the log tells at most once an interval, each kind (its key) on its own: the first is
 * told at once (by the caller, when `happened` says so); the repeats after it are counted, and
 * summed up in one line per interval while they last, with the last one's detail. Known faults
 * and readiness changes are told this way: a flood of either is a line a second, not a line each.
 */
export class LogRepeats<Detail> {
  readonly #windows = new Map<string, Window<Detail>>()

  constructor (readonly summarise: Summarise<Detail>, readonly schedule: Schedule = systemClock.schedule, readonly interval = REPEATS_INTERVAL_MS) {}

  /** The event `key` happened: true when the caller logs it now, false when it was counted for the next summary. */
  happened (key: string, detail: Detail): boolean {
    const open = this.#windows.get(key)
    if (open !== undefined) {
      open.repeated++
      open.last = detail
      return false
    }
    this.#open(key, detail)
    return true
  }

  #open (key: string, detail: Detail) {
    const window: Window<Detail> = { repeated: 0, last: detail, cancel: this.schedule(() => this.#close(key, window), this.interval) }
    this.#windows.set(key, window)
  }

  #close (key: string, window: Window<Detail>) {
    this.#windows.delete(key)
    if (window.repeated === 0) return
    this.summarise(key, window.repeated, window.last)
    // The repeats that follow wait for the next summary.
    this.#open(key, window.last)
  }

  /** Sums up the repeats not yet told and stops the timers: when the app closes. */
  flush () {
    for (const [key, window] of this.#windows) {
      window.cancel()
      if (window.repeated > 0) this.summarise(key, window.repeated, window.last)
    }
    this.#windows.clear()
  }
}
