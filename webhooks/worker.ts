import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { failureFields } from '../errors/index.js'
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, WebhookOutbox } from '../stores/outbox.js'
import type { WebhookEndpoint, WebhooksConfig } from './config.js'
import { nextWait } from './schedule.js'
import { EndpointSender, type AttemptResult } from './send.js'
import { webhookHeaders } from './signing.js'
import { tracedAttempt, type WebhookTracing } from './tracing.js'

export interface WorkerLog {
  warn (object: object, message: string): void
}

export interface DeliveryWorkerOptions {
  outbox: WebhookOutbox
  config: WebhooksConfig
  log: WorkerLog
  /** Told of every attempt, for the metrics. */
  onAttempt?: (endpoint: string, outcome: AttemptOutcome, seconds: number) => void
  /** Attempts in flight per endpoint at most (its connections, too). */
  concurrency?: number
  /** How often due deliveries are looked for when nothing wakes the worker. */
  pollMs?: number
  /** How often finished events past the retention are looked for (default every minute). */
  pruneEveryMs?: number
  now?: () => number
  random?: () => number
  /** A span per attempt, its traceparent sent (the service's tracing, when on). */
  tracing?: WebhookTracing | undefined
}

export const DEFAULT_CONCURRENCY = 64
export const DEFAULT_POLL_MS = 1000
// A claim outlives its attempt (bounded by the timeout) by as long again plus a second, to write
// the result; after that, another instance may take the delivery over.
const leaseFor = (timeout: number) => 2 * timeout + 1000
// How often an endpoint's failing streak is looked at, and old events pruned.
const DISABLE_CHECK_MS = 60_000
// Each run removes batch after batch until none is left, so that pruning keeps up with any rate
// of creates; the pause between batches lets the store's own writes through.
const PRUNE_EVERY_MS = 60_000
const PRUNE_PAUSE_MS = 10
const FLUSH_DELAY_MS = 5

interface Endpoint {
  config: WebhookEndpoint
  sender: EndpointSender
  inFlight: number
  /** The last claim filled its limit: more may be due at once. */
  backlog: boolean
  lastDisableCheck: number
}

/**
 * Claims due deliveries from the outbox and sends them, each endpoint on its own connections and
 * with its own limit, so that a slow or dead endpoint delays no other one. Results are written
 * in batches, off the request path; a result that cannot be written only means the delivery is
 * sent again once its lease has run out.
 */
export class DeliveryWorker {
  private readonly endpoints = new Map<string, Endpoint>()
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly now: () => number
  private readonly random: () => number
  private readonly abort = new AbortController()
  private readonly inFlight = new Set<Promise<void>>()
  private readonly writes = new Set<Promise<void>>()
  private records: AttemptRecord[] = []
  private releases: ClaimedDelivery[] = []
  private poll?: NodeJS.Timeout
  private prune?: NodeJS.Timeout
  private pruning?: Promise<void>
  private ticking = false
  private ticked?: Promise<void>
  private again = false
  private woken = false
  private flushQueued = false
  private stopping = false

  constructor (private readonly options: DeliveryWorkerOptions) {
    const { config } = options
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
    this.leaseMs = leaseFor(config.timeout)
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS
    this.now = options.now ?? Date.now
    this.random = options.random ?? Math.random
    // Every attempt in flight listens to it: up to `concurrency` per endpoint, not Node's default of 10.
    setMaxListeners(0, this.abort.signal)
    for (const endpoint of config.endpoints) {
      this.endpoints.set(endpoint.name, {
        config: endpoint,
        sender: new EndpointSender(endpoint.url, config.allowedNetworks, config.timeout, this.concurrency),
        inFlight: 0,
        backlog: false,
        lastDisableCheck: 0
      })
    }
  }

  start (): void {
    this.poll = setInterval(() => this.tick(), this.pollMs).unref()
    this.prune = setInterval(() => { this.pruneOld() }, this.options.pruneEveryMs ?? PRUNE_EVERY_MS).unref()
    this.pruneOld()
    this.wake()
  }

  /** Looks for due deliveries soon: once per turn of the event loop, however often it is called. */
  wake (): void {
    if (this.woken || this.stopping) return
    this.woken = true
    setImmediate(() => {
      this.woken = false
      this.tick()
    })
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

  /** Claims what is due for the endpoints with room, and sends it; again while more may be due. */
  private async claimAndSend (): Promise<void> {
    try {
      do {
        this.again = false
        const wants = [...this.endpoints.values()]
          .filter((endpoint) => endpoint.inFlight < this.concurrency)
          .map((endpoint) => ({ endpoint: endpoint.config.name, limit: this.concurrency - endpoint.inFlight }))
        const claimed = await this.options.outbox.claim(wants, this.leaseMs)
        if (this.stopping) {
          this.releases.push(...claimed)
          this.queueFlush()
          break
        }
        const counts = new Map<string, number>()
        for (const delivery of claimed) {
          counts.set(delivery.endpoint, (counts.get(delivery.endpoint) ?? 0) + 1)
          this.attempt(delivery)
        }
        for (const { endpoint, limit } of wants) {
          const state = this.endpoints.get(endpoint)!
          state.backlog = counts.get(endpoint) === limit
        }
      } while (this.again && !this.stopping)
    } catch (error) {
      // The store is down: the next poll tries again.
      this.options.log.warn(failureFields(error), 'webhooks: due deliveries could not be claimed; trying again')
    }
  }

  private attempt (delivery: ClaimedDelivery): void {
    const endpoint = this.endpoints.get(delivery.endpoint)!
    endpoint.inFlight++
    const headers = webhookHeaders(endpoint.config.keys, delivery.messageId, delivery.payload, this.now())
    const done: Promise<void> = tracedAttempt(this.options.tracing, delivery, headers, (sent) => endpoint.sender.send(sent, delivery.payload, this.abort.signal))
      .then((result) => this.settle(endpoint, delivery, result))
      .finally(() => {
        endpoint.inFlight--
        this.inFlight.delete(done)
        // With more due, claimed again once half the slots are free: claims come in batches.
        if (endpoint.backlog && endpoint.inFlight <= this.concurrency / 2) this.wake()
      })
    this.inFlight.add(done)
  }

  private async settle (endpoint: Endpoint, delivery: ClaimedDelivery, result: AttemptResult): Promise<void> {
    if (this.abort.signal.aborted && result.outcome === 'network') {
      // Cut off at shutdown: handed back for another instance, not counted as an attempt.
      this.releases.push(delivery)
      this.queueFlush()
      return
    }
    const now = this.now()
    const attempts = delivery.attempts + 1
    this.options.onAttempt?.(delivery.endpoint, result.outcome, result.durationMs / 1000)
    let next: AttemptRecord['next']
    if (result.outcome === 'success') {
      next = { state: 'delivered' }
    } else if (result.outcome === 'gone') {
      // Kept pending: sent once the operator enables the endpoint again. Disabled first, so
      // that no worker claims it again meanwhile.
      await this.disable(endpoint, `${delivery.endpoint} answered 410 Gone`)
      next = { state: 'pending', dueAt: new Date(now) }
    } else {
      const wait = nextWait(this.options.config.retrySchedule, {
        attempts, status: result.status, timedOut: result.outcome === 'timeout', retryAfter: result.retryAfter
      }, now, this.random)
      next = wait === undefined ? { state: 'failed' } : { state: 'pending', dueAt: new Date(now + wait) }
      // A retry due before the next poll is looked for when it falls due, not at the poll.
      if (wait !== undefined && wait < this.pollMs) setTimeout(() => this.wake(), wait).unref()
    }
    this.records.push({
      seq: delivery.seq,
      endpoint: delivery.endpoint,
      claim: delivery.claim,
      outcome: result.outcome,
      ...(result.status !== undefined && { status: result.status }),
      ...(result.error !== undefined && { error: result.error }),
      at: new Date(now),
      durationMs: Math.round(result.durationMs),
      next
    })
    this.queueFlush()
  }

  private async disable (endpoint: Endpoint, reason: string): Promise<void> {
    try {
      await this.options.outbox.setEnabled(endpoint.config.name, false, reason)
      this.options.log.warn({ endpoint: endpoint.config.name, reason }, 'webhooks: endpoint disabled')
    } catch (error) {
      this.options.log.warn({ ...failureFields(error), endpoint: endpoint.config.name }, 'webhooks: endpoint could not be disabled')
    }
  }

  private queueFlush (): void {
    if (this.flushQueued) return
    this.flushQueued = true
    // A few ms later: the results of a burst of attempts are written together.
    setTimeout(() => {
      this.flushQueued = false
      const write = this.flush().finally(() => this.writes.delete(write))
      this.writes.add(write)
    }, FLUSH_DELAY_MS)
  }

  /** Writes the results and releases gathered since the last flush, in one call each. */
  private async flush (): Promise<void> {
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
      if (failing.size > 0) await this.disableLongFailing(failing)
    } catch (error) {
      log.warn(failureFields(error), 'webhooks: attempt results could not be written; those deliveries are sent again once their lease runs out')
    }
  }

  /** Disables the endpoints among `names` that have had no success for longer than the setting. */
  private async disableLongFailing (names: Set<string>): Promise<void> {
    const now = this.now()
    const { disableAfter } = this.options.config
    // Checked at most once a minute per endpoint, and several times within a short disableAfter.
    const every = Math.min(DISABLE_CHECK_MS, disableAfter / 4)
    const due = [...names].map((name) => this.endpoints.get(name)!).filter((endpoint) => now - endpoint.lastDisableCheck >= every)
    if (due.length === 0) return
    for (const endpoint of due) endpoint.lastDisableCheck = now
    for (const state of await this.options.outbox.endpoints()) {
      const endpoint = this.endpoints.get(state.name)
      if (endpoint === undefined || !due.includes(endpoint) || !state.enabled || state.failingSince === undefined) continue
      if (now - state.failingSince.getTime() >= disableAfter) {
        await this.disable(endpoint, `no successful delivery since ${state.failingSince.toISOString()}`)
      }
    }
  }

  private pruneOld (): void {
    this.pruning ??= this.pruneAll().finally(() => { this.pruning = undefined })
  }

  private async pruneAll (): Promise<void> {
    const before = new Date(this.now() - this.options.config.retention)
    try {
      while (!this.stopping && await this.options.outbox.prune(before) > 0) await sleep(PRUNE_PAUSE_MS)
    } catch (error) {
      this.options.log.warn(failureFields(error), 'webhooks: old events could not be pruned; trying again later')
    }
  }

  /** Stops claiming: what is due stays in the outbox for another instance, or for the next start. */
  pause (): void {
    this.stopping = true
    clearInterval(this.poll)
    clearInterval(this.prune)
  }

  /**
   * Stops claiming; attempts in flight may finish within `drainMs`, the rest are cut off and their
   * deliveries handed back. Resolves once every result and release is written (or failed to be).
   */
  async stop (drainMs: number): Promise<void> {
    this.pause()
    await this.ticked
    await this.pruning
    if (this.inFlight.size > 0) await Promise.race([Promise.all(this.inFlight), sleep(drainMs, undefined, { ref: false })])
    this.abort.abort()
    await Promise.all(this.inFlight)
    await this.flush()
    await Promise.all(this.writes)
    for (const endpoint of this.endpoints.values()) endpoint.sender.close()
  }
}
