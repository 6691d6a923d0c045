import { failureFields } from '../../http/errors.js'
import { every, type Clock } from '../../http/clock.js'
import type { AttemptOutcome, ClaimedDelivery, WebhookOutbox } from '../../store/outbox.js'
import type { WebhookEndpoint, WebhooksConfig } from '../settings.js'
import { EndpointSender, type AttemptResult } from './attempt.js'
import { Results } from './results.js'
import { webhookHeaders } from './signing.js'
import { encodeCursor } from '../../feed/cursor.js'
import { tracedAttempt, type WebhookTracing } from './tracing.js'
import { Upkeep } from './upkeep.js'
import type { WorkerLog } from './worker-log.js'

export type { WorkerLog }

export interface DeliveryWorkerOptions {
  outbox: WebhookOutbox
  config: WebhooksConfig
  log: WorkerLog
  /**
   * The time and the timers of the worker and its parts: the attempts' signatures, timeouts and
   * results, the polls, claim gaps, batches and pruning (systemClock but in tests).
   */
  clock: Clock
  /** Told of every attempt, for the metrics. */
  onAttempt?: (endpoint: string, outcome: AttemptOutcome, seconds: number) => void
  /** Attempts in flight per endpoint at most (its connections, too). */
  concurrency?: number
  /** How often due deliveries are looked for when nothing wakes the worker. */
  pollMs?: number
  /** Claims a wake-up starts come at most this often (see wake()). */
  claimGapMs?: number
  /** How often finished events past the retention are looked for (default every minute). */
  pruneEveryMs?: number
  /** The retry schedule's jitter. */
  random?: () => number
  /** A span per attempt, its traceparent sent (the service's tracing, when on). */
  tracing?: WebhookTracing | undefined
}

export const DEFAULT_CONCURRENCY = 64
export const DEFAULT_POLL_MS = 1000
export const DEFAULT_CLAIM_GAP_MS = 20
// A fast endpoint's backlog is claimed up to this many times its attempts in flight at once, the
// rest waiting in the worker: its claims and results then cost a few large transactions, not many
// small ones. How far ahead follows its recent attempts' duration (see capacity).
const MAX_CLAIMED_PER_SLOT = 8
// A claim outlives its attempt (bounded by the timeout) by as long again plus a second, to write
// the result; after that, another instance may take the delivery over.
const leaseFor = (timeout: number) => 2 * timeout + 1000

interface Endpoint {
  config: WebhookEndpoint
  sender: EndpointSender
  inFlight: number
  /** Claimed and waiting for a free slot, oldest first, each with the time it was claimed. */
  waiting: Array<{ delivery: ClaimedDelivery, claimedAt: number }>
  /** The last claim filled its limit: more may be due at once. */
  backlog: boolean
  /** The recent attempts' mean duration in ms (undefined before the first). */
  meanMs: number | undefined
}

/**
 * Claims due deliveries from the outbox and sends them, each endpoint on its own connections and
 * with its own limit, so that a slow or dead endpoint delays no other one. Their results are
 * written in batches (results.ts); endpoints are disabled and old events pruned beside (upkeep.ts).
 */
export class DeliveryWorker {
  private readonly endpoints = new Map<string, Endpoint>()
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly claimGapMs: number
  private readonly clock: Clock
  private readonly timeout: number
  private readonly results: Results
  private readonly upkeep: Upkeep
  private lastClaimAt = -Infinity
  /** Attempts in flight, all endpoints together. */
  private sending = 0
  private idle?: (() => void) | undefined
  private cancelPolls?: (() => void) | undefined
  private unlisten?: (() => Promise<void>) | undefined
  private unlistened?: Promise<void> | undefined
  private ticking = false
  private ticked?: Promise<void>
  private again = false
  private woken = false
  private stopping = false
  private aborted = false

  constructor (private readonly options: DeliveryWorkerOptions) {
    const { config, outbox, clock, log } = options
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
    this.leaseMs = leaseFor(config.timeout)
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS
    this.claimGapMs = options.claimGapMs ?? DEFAULT_CLAIM_GAP_MS
    this.clock = clock
    this.timeout = config.timeout
    this.upkeep = new Upkeep({ outbox, config, clock, log, pruneEveryMs: options.pruneEveryMs })
    const random = options.random ?? Math.random
    // The results of failed attempts are where a long failing streak shows.
    const failed = (endpoints: Set<string>) => this.upkeep.disableLongFailing(endpoints)
    this.results = new Results({ outbox, retrySchedule: config.retrySchedule, clock, random, log, onAttempt: options.onAttempt, failed })
    for (const endpoint of config.endpoints) {
      const sender = new EndpointSender(endpoint.url, config.allowedNetworks, config.timeout, this.concurrency, clock)
      this.endpoints.set(endpoint.name, { config: endpoint, sender, inFlight: 0, waiting: [], backlog: false, meanMs: undefined })
    }
  }

  start (): void {
    // Woken by the commits of instances that deliver nothing themselves, on a store that can tell them.
    this.unlisten = this.options.outbox.listen?.(() => this.wake())
    this.unlistened = undefined
    this.cancelPolls = every(this.clock, this.pollMs, () => this.tick())
    this.upkeep.start()
    this.wake()
  }

  /**
   * Looks for due deliveries soon: on the next turn of the event loop, or, within `claimGapMs` of
   * the last claim, once that much has passed; once however often it is called meanwhile. After a
   * quiet spell an event leaves at once; under a stream of creates, each claim takes the events of
   * `claimGapMs` together, in one statement.
   */
  wake (): void {
    if (this.woken || this.stopping) return
    this.woken = true
    const run = () => {
      this.woken = false
      this.tick()
    }
    // Never longer than the gap, should the clock be set back.
    const wait = Math.min(this.lastClaimAt + this.claimGapMs - this.clock.now(), this.claimGapMs)
    if (wait > 0) this.clock.schedule(run, wait)
    else setImmediate(run)
  }

  private tick (): void {
    if (this.stopping) return
    if (this.ticking) {
      this.again = true
      return
    }
    this.ticking = true
    this.ticked = this.claimAndSend().finally(() => { this.ticking = false })
  }

  /**
   * How many deliveries an endpoint may hold claimed, in flight or waiting: its slots, plus as many
   * as its recent attempts would send within half the timeout (at most MAX_CLAIMED_PER_SLOT times
   * its slots). A waiting delivery's lease (twice the timeout and a second) then still covers its
   * attempt and the writing of its result; a slow endpoint claims no more than it has slots for.
   */
  private capacity (endpoint: Endpoint): number {
    const { meanMs } = endpoint
    if (meanMs === undefined) return this.concurrency
    const ahead = Math.floor(this.concurrency * this.timeout / 2 / Math.max(meanMs, 1))
    return this.concurrency + Math.min(ahead, (MAX_CLAIMED_PER_SLOT - 1) * this.concurrency)
  }

  private room (endpoint: Endpoint): number {
    return this.capacity(endpoint) - endpoint.inFlight - endpoint.waiting.length
  }

  /** Claims what is due for the endpoints with room, and sends it; again while more may be due. */
  private async claimAndSend (): Promise<void> {
    try {
      do {
        this.again = false
        const wants: Array<{ endpoint: string, limit: number }> = []
        for (const endpoint of this.endpoints.values()) {
          const limit = this.room(endpoint)
          if (limit > 0) wants.push({ endpoint: endpoint.config.name, limit })
        }
        this.lastClaimAt = this.clock.now()
        const claimed = await this.options.outbox.claim(wants, this.leaseMs)
        if (this.stopping) {
          this.results.release(claimed)
          break
        }
        const claimedAt = this.clock.now()
        const counts = new Map<string, number>()
        for (const delivery of claimed) {
          counts.set(delivery.endpoint, (counts.get(delivery.endpoint) ?? 0) + 1)
          this.endpoints.get(delivery.endpoint)!.waiting.push({ delivery, claimedAt })
        }
        for (const { endpoint, limit } of wants) {
          const state = this.endpoints.get(endpoint)!
          state.backlog = counts.get(endpoint) === limit
          this.sendWaiting(state)
        }
      } while (this.again && !this.stopping)
    } catch (error) {
      // The store is down: the next poll tries again.
      this.options.log.warn(failureFields(error), 'webhooks: due deliveries could not be claimed; trying again')
    }
  }

  /**
   * Starts attempts at the endpoint's waiting deliveries while it has free slots. One that waited
   * so long that its attempt might outlast its lease is handed back instead, for a fresh claim.
   */
  private sendWaiting (endpoint: Endpoint): void {
    const { waiting } = endpoint
    let taken = 0
    while (taken < waiting.length && endpoint.inFlight < this.concurrency) {
      const { delivery, claimedAt } = waiting[taken++]
      if (this.clock.now() - claimedAt > this.timeout / 2) this.results.release([delivery])
      else this.attempt(endpoint, delivery)
    }
    waiting.splice(0, taken)
  }

  private attempt (endpoint: Endpoint, delivery: ClaimedDelivery): void {
    endpoint.inFlight++
    this.sending++
    // The body's bytes, made once: signed and sent as they are.
    const body = Buffer.from(delivery.payload)
    const headers = webhookHeaders(endpoint.config.keys, delivery.messageId, body, this.clock.now(), encodeCursor(delivery.feed.id, delivery.feed.position))
    tracedAttempt(this.options.tracing, delivery, headers, (sent) => endpoint.sender.send(sent, body))
      .then((result) => this.settle(endpoint, delivery, result))
  }

  /** An attempt's end: its result gathered for the next write, its slot given to the next delivery. */
  private settle (endpoint: Endpoint, delivery: ClaimedDelivery, result: AttemptResult): void {
    endpoint.meanMs = endpoint.meanMs === undefined ? result.durationMs : endpoint.meanMs + (result.durationMs - endpoint.meanMs) / 8
    if (this.aborted && result.outcome === 'network') {
      // Cut off at shutdown: handed back for another instance, not counted as an attempt.
      this.results.release([delivery])
      return this.free(endpoint)
    }
    if (result.outcome !== 'gone') {
      this.recordResult(delivery, result)
      return this.free(endpoint)
    }
    // Kept pending: sent once the operator enables the endpoint again. Disabled first, so that no
    // worker claims it again meanwhile; what this one claimed ahead for it is handed back unsent.
    this.handBack(endpoint)
    this.upkeep.disable(endpoint.config.name, `${delivery.endpoint} answered 410 Gone`).then(() => {
      this.recordResult(delivery, result)
      this.free(endpoint)
    })
  }

  private recordResult (delivery: ClaimedDelivery, result: AttemptResult): void {
    const wait = this.results.record(delivery, result)
    // A retry due before the next poll is looked for when it falls due, not at the poll.
    if (wait !== undefined && wait < this.pollMs) this.clock.schedule(() => this.wake(), wait)
  }

  /** A slot free again: the next waiting delivery takes it; claimed again once half the room is free. */
  private free (endpoint: Endpoint): void {
    endpoint.inFlight--
    if (--this.sending === 0) this.idle?.()
    if (this.stopping) return
    this.sendWaiting(endpoint)
    if (endpoint.backlog && 2 * this.room(endpoint) >= this.capacity(endpoint)) this.wake()
  }

  /** Resolves once no attempt is in flight. */
  private allSent (): Promise<void> {
    if (this.sending === 0) return Promise.resolve()
    return new Promise((resolve) => {
      this.idle = () => {
        this.idle = undefined
        resolve()
      }
    })
  }

  /** Hands back the deliveries claimed for `endpoint` and waiting for a slot: due at once, unsent, not attempts. */
  private handBack (endpoint: Endpoint): void {
    this.results.release(endpoint.waiting.map(({ delivery }) => delivery))
    endpoint.waiting = []
  }

  /**
   * Stops claiming: what is due stays in the outbox for another instance, or for the next start;
   * what waits in the worker is handed back.
   */
  pause (): void {
    this.stopping = true
    this.unlistened ??= this.unlisten?.()
    this.cancelPolls?.()
    // Pruning too: a run under way ends after its batch (stop waits for it).
    this.upkeep.stop()
    for (const endpoint of this.endpoints.values()) this.handBack(endpoint)
  }

  /**
   * Stops claiming; attempts in flight may finish within `drainMs`, the rest are cut off and their
   * deliveries handed back. Resolves once every result and release is written (or failed to be).
   */
  async stop (drainMs: number): Promise<void> {
    this.pause()
    await this.ticked
    await this.upkeep.stop()
    const sent = this.allSent()
    if (this.sending > 0 && drainMs > 0) {
      let cancel: (() => void) | undefined
      await Promise.race([sent, new Promise<void>((resolve) => { cancel = this.clock.schedule(resolve, drainMs) })])
      cancel!()
    }
    this.aborted = true
    for (const endpoint of this.endpoints.values()) endpoint.sender.abort()
    await sent
    await this.results.flush()
    await this.unlistened
    for (const endpoint of this.endpoints.values()) endpoint.sender.close()
  }
}
