import type { FastifyBaseLogger } from 'fastify'
import { reasonOf } from './errors.js'
import { LogRepeats, type Schedule } from './log-repeats.js'

/**
 * Known faults (isKnownFault) as the log tells them: under an outage every request fails, and a
 * line with two stacks for each (2 KB) made 95 MB of log in 15 s. The first of each kind (its
 * code) is one line without a stack; the repeats after it are counted, and summed up in one line
 * per interval while they last.
 */
export class FaultLog {
  readonly #repeats: LogRepeats<string>

  constructor (readonly log: FastifyBaseLogger, schedule?: Schedule) {
    this.#repeats = new LogRepeats((code, repeated, reason) => {
      this.log.warn({ code, reason, repeated }, `request failed ${repeated} more times`)
    }, schedule)
  }

  /** A request failed with a known fault: logged on `log` (the request's), or counted. */
  failed (log: FastifyBaseLogger, code: string, error: unknown) {
    const reason = reasonOf(error)
    if (this.#repeats.happened(code, reason)) log.warn({ code, reason }, 'request failed')
  }

  /** Sums up the repeats not yet told and stops the timers: when the app closes. */
  flush () {
    this.#repeats.flush()
  }
}
