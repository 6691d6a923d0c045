import type { FastifyBaseLogger } from 'fastify'
import { reasonOf } from '../errors/index.js'

/** How often, at most, the log sums up the repeats of a known fault. */
export const REPEATS_INTERVAL_MS = 1000

/** Runs `fn` after `ms` ms unless the function returned is called first (a test injects its own clock). */
export type Schedule = (fn: () => void, ms: number) => () => void

const unrefTimeout: Schedule = (fn, ms) => {
  const timer = setTimeout(fn, ms).unref()
  return () => clearTimeout(timer)
}

interface Window { repeated: number, reason: string, cancel: () => void }

/**
 * Known faults (isKnownFault) as the log tells them: under an outage every request fails, and a
 * line with two stacks for each (2 KB) made 95 MB of log in 15 s. The first of each kind (its
 * code) is one line without a stack; the repeats after it are counted, and summed up in one line
 * per interval while they last.
 */
export class FaultLog {
  readonly #windows = new Map<string, Window>()

  constructor (readonly log: FastifyBaseLogger, readonly schedule: Schedule = unrefTimeout, readonly interval = REPEATS_INTERVAL_MS) {}

  /** A request failed with a known fault: logged on `log` (the request's), or counted. */
  failed (log: FastifyBaseLogger, code: string, error: unknown) {
    const reason = reasonOf(error)
    const open = this.#windows.get(code)
    if (open !== undefined) {
      open.repeated++
      open.reason = reason
      return
    }
    log.warn({ code, reason }, 'request failed')
    this.#open(code, reason)
  }

  #open (code: string, reason: string) {
    const window: Window = { repeated: 0, reason, cancel: this.schedule(() => this.#close(code, window), this.interval) }
    this.#windows.set(code, window)
  }

  #close (code: string, window: Window) {
    this.#windows.delete(code)
    if (window.repeated === 0) return
    this.#summarise(code, window)
    // The repeats that follow wait for the next summary.
    this.#open(code, window.reason)
  }

  #summarise (code: string, { repeated, reason }: Window) {
    this.log.warn({ code, reason, repeated }, `request failed ${repeated} more times`)
  }

  /** Sums up the repeats not yet told and stops the timers: when the app closes. */
  flush () {
    for (const [code, window] of this.#windows) {
      window.cancel()
      if (window.repeated > 0) this.#summarise(code, window)
    }
    this.#windows.clear()
  }
}
