import type { FastifyBaseLogger } from 'fastify'
import { failureFields } from '../errors/index.js'
import type { PlantStore } from './types.js'

export const NOT_READY_AT_START = 'plant-store: the store does not answer at start-up: /readyz answers 503 until it does'
export const NOT_READY = 'plant-store: the store stopped answering: /readyz answers 503 until it answers again'
export const READY_AGAIN = 'plant-store: the store answers again: /readyz answers 200'

/**
 * The store's readiness as its probes find it (one at start-up, then /readyz): logged when it
 * changes, not on every probe, which a load balancer sends every few seconds.
 */
export class Readiness {
  #ready: boolean | undefined

  constructor (readonly log: FastifyBaseLogger) {}

  /** Pings `store` (a guarded one: its failures are the plugin's errors): whether it answers. */
  async probe (store: PlantStore): Promise<boolean> {
    try {
      await store.ping()
    } catch (failure) {
      if (this.#ready !== false) this.log.warn(failureFields(failure), this.#ready === undefined ? NOT_READY_AT_START : NOT_READY)
      this.#ready = false
      return false
    }
    if (this.#ready === false) this.log.info(READY_AGAIN)
    this.#ready = true
    return true
  }
}
