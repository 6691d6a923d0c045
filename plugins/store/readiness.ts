import type { FastifyBaseLogger } from 'fastify'
import { failureFields, reasonOf } from '../http/errors.js'
import { LogRepeats, type Schedule } from '../http/log-repeats.js'
import type { PlantStore } from './types.js'

export const NOT_READY_AT_START = 'plant-store: the store does not answer at start-up: /readyz answers 503 until it does'
export const NOT_READY = 'plant-store: the store stopped answering: /readyz answers 503 until it answers again'
export const READY_AGAIN = 'plant-store: the store answers again: /readyz answers 200'
/** The summary of the changes after a told one: how many, and what /readyz answers now. */
export const readinessChanged = (repeated: number, ready: boolean) =>
  `plant-store: the store's readiness changed ${repeated} more times: /readyz now answers ${ready ? 200 : 503}`

/** A change of readiness: to ready, or to not ready for `failure`. */
type Change = { ready: true } | { ready: false, failure: unknown }

/**
 * The store's readiness as its probes find it (one at start-up, then /readyz): logged when it
 * changes, not on every probe, which a load balancer sends every few seconds. A store that flaps
 * (a probe 16 times a second made 48 lines in 6 s) is summed up as known faults are: the first
 * change at once, the ones after it counted and told once a second with what /readyz answers
 * then, so the last line always tells the state.
 */
export class Readiness {
  #ready: boolean | undefined
  readonly #changes: LogRepeats<Change>

  constructor (readonly log: FastifyBaseLogger, schedule?: Schedule) {
    this.#changes = new LogRepeats((_key, repeated, change) => {
      const message = readinessChanged(repeated, change.ready)
      if (change.ready) this.log.info({ repeated }, message)
      else this.log.warn({ repeated, reason: reasonOf(change.failure) }, message)
    }, schedule)
  }

  /** Pings `store` (a guarded one: its failures are the plugin's errors): whether it answers. */
  async probe (store: PlantStore): Promise<boolean> {
    try {
      await store.ping()
    } catch (failure) {
      if (this.#ready !== false && this.#changes.happened('readiness', { ready: false, failure })) {
        this.log.warn(failureFields(failure), this.#ready === undefined ? NOT_READY_AT_START : NOT_READY)
      }
      this.#ready = false
      return false
    }
    if (this.#ready === false && this.#changes.happened('readiness', { ready: true })) this.log.info(READY_AGAIN)
    this.#ready = true
    return true
  }

  /** Sums up the changes not yet told and stops the timer: when the app closes. */
  flush () {
    this.#changes.flush()
  }
}
