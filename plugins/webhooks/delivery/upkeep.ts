import { failureFields } from '../../http/errors.js'
import { every, type Clock } from '../../http/clock.js'
import type { WebhookOutbox } from '../../store/outbox.js'
import type { WebhooksConfig } from '../settings.js'
import type { WorkerLog } from './worker-log.js'

// How often, at most, an endpoint's failing streak is looked at.
const DISABLE_CHECK_MS = 60_000
// Each run removes batch after batch until none is left, so that pruning keeps up with any rate
// of creates; the pause between batches lets the store's own writes through.
const PRUNE_EVERY_MS = 60_000
export const PRUNE_PAUSE_MS = 10

export interface UpkeepOptions {
  outbox: WebhookOutbox
  config: Pick<WebhooksConfig, 'disableAfter' | 'retention'>
  clock: Clock
  log: WorkerLog
  /** How often finished events past the retention are looked for (default every minute). */
  pruneEveryMs?: number | undefined
}

/**
 * The delivery worker's housekeeping: endpoints disabled (a 410, or no success for longer than
 * disableAfter), and finished events past the retention pruned, at the start and every minute.
 */
export class Upkeep {
  /** When each endpoint's failing streak was last looked at. */
  private readonly checked = new Map<string, number>()
  private cancelPrunes?: (() => void) | undefined
  private pruning?: Promise<void> | undefined
  private endPause?: (() => void) | undefined
  private stopping = false

  constructor (private readonly options: UpkeepOptions) {}

  start (): void {
    this.cancelPrunes = every(this.options.clock, this.options.pruneEveryMs ?? PRUNE_EVERY_MS, () => this.prune())
    this.prune()
  }

  /** Prunes no more: a run under way stops after its batch; resolves once it has. */
  stop (): Promise<void> {
    this.stopping = true
    this.cancelPrunes?.()
    this.endPause?.()
    return this.pruning ?? Promise.resolve()
  }

  /** Disables the endpoint `name`, saying why; a failure to is only logged. */
  async disable (name: string, reason: string): Promise<void> {
    const { outbox, log } = this.options
    try {
      await outbox.setEnabled(name, false, reason)
      log.warn({ endpoint: name, reason }, 'webhooks: endpoint disabled')
    } catch (error) {
      log.warn({ ...failureFields(error), endpoint: name }, 'webhooks: endpoint could not be disabled')
    }
  }

  /** Disables the endpoints among `names` that have had no success for longer than disableAfter. */
  async disableLongFailing (names: Set<string>): Promise<void> {
    const now = this.options.clock.now()
    const { disableAfter } = this.options.config
    // Checked at most once a minute per endpoint, and several times within a short disableAfter.
    const every = Math.min(DISABLE_CHECK_MS, disableAfter / 4)
    const due = [...names].filter((name) => now - (this.checked.get(name) ?? -Infinity) >= every)
    if (due.length === 0) return
    for (const name of due) this.checked.set(name, now)
    for (const state of await this.options.outbox.endpoints()) {
      if (!due.includes(state.name) || !state.enabled || state.failingSince === undefined) continue
      if (now - state.failingSince.getTime() >= disableAfter) {
        await this.disable(state.name, `no successful delivery since ${state.failingSince.toISOString()}`)
      }
    }
  }

  private prune (): void {
    this.pruning ??= this.pruneAll().finally(() => { this.pruning = undefined })
  }

  private async pruneAll (): Promise<void> {
    const { outbox, clock, config, log } = this.options
    const before = new Date(clock.now() - config.retention)
    try {
      while (!this.stopping && await outbox.prune(before) > 0) await this.pause(PRUNE_PAUSE_MS)
    } catch (error) {
      log.warn(failureFields(error), 'webhooks: old events could not be pruned; trying again later')
    }
  }

  /** A pause on the clock, ended at once by stop(). */
  private pause (ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.options.clock.schedule(() => this.endPause!(), ms)
      this.endPause = () => {
        this.endPause = undefined
        cancel()
        resolve()
      }
    })
  }
}
