import { failureFields } from '../../http/errors.js'
import type { Clock } from '../../http/clock.js'
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, WebhookOutbox } from '../../store/outbox.js'
import type { AttemptResult } from './attempt.js'
import { nextWait } from './schedule.js'
import type { WorkerLog } from './worker-log.js'

// The results of the attempts that end within this time are written together, in one transaction;
// as soon as this many are waiting, at once.
export const FLUSH_DELAY_MS = 20
export const FLUSH_BATCH = 512
const DELIVERED: AttemptRecord['next'] = { state: 'delivered' }
const FAILED: AttemptRecord['next'] = { state: 'failed' }

export interface ResultsOptions {
  outbox: WebhookOutbox
  retrySchedule: readonly number[]
  clock: Clock
  random: () => number
  log: WorkerLog
  /** Told of every attempt, for the metrics. */
  onAttempt?: ((endpoint: string, outcome: AttemptOutcome, seconds: number) => void) | undefined
  /** Told, once their results are written, of the endpoints that failed an attempt. */
  failed: (endpoints: Set<string>) => Promise<void>
}

/**
 * The delivery worker's results on their way to the outbox: what becomes of each delivery after
 * its attempt (delivered, due again when the schedule says, failed for good), and the claims
 * handed back unsent. Gathered and written in batches, off the request path; a batch that cannot
 * be written only means its deliveries are sent again once their leases have run out.
 */
export class Results {
  private records: AttemptRecord[] = []
  private releases: ClaimedDelivery[] = []
  private cancelFlush: (() => void) | undefined
  private readonly writes = new Set<Promise<void>>()

  constructor (private readonly options: ResultsOptions) {}

  /** Gathers the result of an attempt at `delivery`; returns the wait before its next attempt, when there is one. */
  record (delivery: ClaimedDelivery, result: AttemptResult): number | undefined {
    const { outcome, status, error } = result
    const now = this.options.clock.now()
    this.options.onAttempt?.(delivery.endpoint, outcome, result.durationMs / 1000)
    let next: AttemptRecord['next']
    let wait: number | undefined
    if (outcome === 'success') {
      next = DELIVERED
    } else if (outcome === 'gone') {
      // Kept pending: sent once the operator enables the endpoint again.
      next = { state: 'pending', dueAt: new Date(now) }
    } else {
      wait = nextWait(this.options.retrySchedule, {
        attempts: delivery.attempts + 1, status, timedOut: outcome === 'timeout', retryAfter: result.retryAfter
      }, now, this.options.random)
      next = wait === undefined ? FAILED : { state: 'pending', dueAt: new Date(now + wait) }
    }
    const record: AttemptRecord = {
      seq: delivery.seq, endpoint: delivery.endpoint, claim: delivery.claim, outcome, at: new Date(now), durationMs: Math.round(result.durationMs), next
    }
    if (status !== undefined) record.status = status
    if (error !== undefined) record.error = error
    this.records.push(record)
    this.queue()
    return wait
  }

  /** Hands claimed deliveries back unsent, due at once for any worker: not attempts. */
  release (deliveries: Iterable<ClaimedDelivery>): void {
    const before = this.releases.length
    this.releases.push(...deliveries)
    if (this.releases.length > before) this.queue()
  }

  /** Writes what is gathered now, and resolves once every write under way has ended (written or failed). */
  async flush (): Promise<void> {
    this.cancelFlush?.()
    this.cancelFlush = undefined
    await this.writeAll()
    await Promise.all(this.writes)
  }

  /** Writes the results gathered within FLUSH_DELAY_MS together, or at once when FLUSH_BATCH are waiting. */
  private queue (): void {
    if (this.records.length + this.releases.length >= FLUSH_BATCH) {
      this.cancelFlush?.()
      this.cancelFlush = undefined
      this.write()
    } else {
      this.cancelFlush ??= this.options.clock.schedule(() => {
        this.cancelFlush = undefined
        this.write()
      }, FLUSH_DELAY_MS)
    }
  }

  private write (): void {
    const write = this.writeAll().finally(() => this.writes.delete(write))
    this.writes.add(write)
  }

  /** Writes the results and releases gathered since the last write, in one call each. */
  private async writeAll (): Promise<void> {
    const [records, releases] = [this.records, this.releases]
    this.records = []
    this.releases = []
    const { outbox, log } = this.options
    if (releases.length > 0) {
      await outbox.release(releases).catch((error: unknown) =>
        log.warn(failureFields(error), 'webhooks: claims could not be released; they are taken over when their lease runs out'))
    }
    if (records.length === 0) return
    try {
      await outbox.record(records)
      const failing = new Set(records.filter(({ outcome }) => outcome !== 'success').map(({ endpoint }) => endpoint))
      if (failing.size > 0) await this.options.failed(failing)
    } catch (error) {
      log.warn(failureFields(error), 'webhooks: attempt results could not be written; those deliveries are sent again once their lease runs out')
    }
  }
}
