import { setTimeout as sleep } from 'node:timers/promises'
import { failureFields } from '../../http/errors.js'
import type { AttemptOutcome, AttemptRecord, ClaimedDelivery, WebhookOutbox } from '../../store/outbox.js'
import type { WebhookEndpoint, WebhooksConfig } from '../settings.js'
import { nextWait } from './schedule.js'
import { EndpointSender, type AttemptResult } from './attempt.js'
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
  /** Claims a wake-up starts come at most this often (see wake()). */
  claimGapMs?: number
  /** How often finished events past the retention are looked for (default every minute). */
  pruneEveryMs?: number
  now?: () => number
  random?: () => number
  /** A span per attempt, its traceparent sent (the service's tracing, when on). */
  tracing?: WebhookTracing | undefined
}

export const DEFAULT_CONCURRENCY = 64
export const DEFAULT_POLL_MS = 1000
export const DEFAULT_CLAIM_GAP_MS = 20
// A fast endpoint's backlog is claimed up to this many times its attempts in flight at once, the
// rest waiting in the worker: its claims and results then cost a few large transactions, not many
// small ones. How far ahead follows its recent attempts' duration (see claimAhead).
const MAX_CLAIMED_PER_SLOT = 8
// The results of the attempts that end within this time are written together, in one transaction;
// as soon as this many are waiting, at once.
const FLUSH_DELAY_MS = 20
const FLUSH_BATCH = 512
// A claim outlives its attempt (bounded by the timeout) by as long again plus a second, to write
// the result; after that, another instance may take the delivery over.
const leaseFor = (timeout: number) => 2 * timeout + 1000
// How often an endpoint's failing streak is looked at, and old events pruned.
const DISABLE_CHECK_MS = 60_000
// Each run removes batch after batch until none is left, so that pruning keeps up with any rate
// of creates; the pause between batches lets the store's own writes through.
const PRUNE_EVERY_MS = 60_000
const PRUNE_PAUSE_MS = 10
const DELIVERED: AttemptRecord['next'] = { state: 'delivered' }
const FAILED: AttemptRecord['next'] = { state: 'failed' }

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
  private readonly claimGapMs: number
  private lastClaimAt = -Infinity
  private readonly now: () => number
  private readonly random: () => number
  private readonly timeout: number
  /** Attempts in flight, all endpoints together. */
  private sending = 0
  private idle?: (() => void) | undefined
  private readonly writes = new Set<Promise<void>>()
  private records: AttemptRecord[] = []
  private releases: ClaimedDelivery[] = []
  private poll?: NodeJS.Timeout
  private unlisten?: (() => Promise<void>) | undefined
  private unlistened?: Promise<void> | undefined
  private prune?: NodeJS.Timeout
  private pruning?: Promise<void>
  private ticking = false
  private ticked?: Promise<void>
  private again = false
  private woken = false
  private flush?: NodeJS.Timeout
  private stopping = false
  private aborted = false

  constructor (private readonly options: DeliveryWorkerOptions) {
    const { config } = options
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
    this.leaseMs = leaseFor(config.timeout)
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS
    this.claimGapMs = options.claimGapMs ?? DEFAULT_CLAIM_GAP_MS
    this.now = options.now ?? Date.now
    this.random = options.random ?? Math.random
    this.timeout = config.timeout
    for (const endpoint of config.endpoints) {
      this.endpoints.set(endpoint.name, {
        config: endpoint,
        sender: new EndpointSender(endpoint.url, config.allowedNetworks, config.timeout, this.concurrency),
        inFlight: 0,
        waiting: [],
        backlog: false,
        meanMs: undefined,
        lastDisableCheck: 0
      })
    }
  }

  start (): void {
    // Woken by the commits of instances that deliver nothing themselves, on a store that can tell them.
    this.unlisten = this.options.outbox.listen?.(() => this.wake())
    this.unlistened = undefined
    this.poll = setInterval(() => this.tick(), this.pollMs).unref()
    this.prune = setInterval(() => { this.pruneOld() }, this.options.pruneEveryMs ?? PRUNE_EVERY_MS).unref()
    this.pruneOld()
    this.wake()
  }

  /** Looks for due deliveries soon: once per turn of the event loop, however often it is called. */
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
    const wait = this.lastClaimAt + this.claimGapMs - performance.now()
    if (wait > 0) setTimeout(run, wait)
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
        this.lastClaimAt = performance.now()
        const claimed = await this.options.outbox.claim(wants, this.leaseMs)
        if (this.stopping) {
          this.releases.push(...claimed)
          this.queueFlush()
          break
        }
        const claimedAt = this.now()
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
      if (this.now() - claimedAt > this.timeout / 2) {
        this.releases.push(delivery)
        this.queueFlush()
      } else {
        this.attempt(endpoint, delivery)
      }
    }
    waiting.splice(0, taken)
  }

  private attempt (endpoint: Endpoint, delivery: ClaimedDelivery): void {
    endpoint.inFlight++
    this.sending++
    // The body's bytes, made once: signed and sent as they are.
    const body = Buffer.from(delivery.payload)
    const headers = webhookHeaders(endpoint.config.keys, delivery.messageId, body, this.now())
    tracedAttempt(this.options.tracing, delivery, headers, (sent) => endpoint.sender.send(sent, body))
      .then((result) => this.settle(endpoint, delivery, result))
  }

  /** An attempt's end: its result gathered for the next write, its slot given to the next delivery. */
  private settle (endpoint: Endpoint, delivery: ClaimedDelivery, result: AttemptResult): void {
    endpoint.meanMs = endpoint.meanMs === undefined ? result.durationMs : endpoint.meanMs + (result.durationMs - endpoint.meanMs) / 8
    if (this.aborted && result.outcome === 'network') {
      // Cut off at shutdown: handed back for another instance, not counted as an attempt.
      this.releases.push(delivery)
      this.queueFlush()
      return this.free(endpoint)
    }
    if (result.outcome !== 'gone') {
      this.recordResult(delivery, result, this.now())
      return this.free(endpoint)
    }
    // Kept pending: sent once the operator enables the endpoint again. Disabled first, so that no
    // worker claims it again meanwhile; what this one claimed ahead for it is handed back unsent.
    this.handBack(endpoint)
    this.disable(endpoint, `${delivery.endpoint} answered 410 Gone`).then(() => {
      this.recordResult(delivery, result, this.now())
      this.free(endpoint)
    })
  }

  private recordResult (delivery: ClaimedDelivery, result: AttemptResult, now: number): void {
    const { outcome, status, error } = result
    this.options.onAttempt?.(delivery.endpoint, outcome, result.durationMs / 1000)
    let next: AttemptRecord['next']
    if (outcome === 'success') {
      next = DELIVERED
    } else if (outcome === 'gone') {
      next = { state: 'pending', dueAt: new Date(now) }
    } else {
      const wait = nextWait(this.options.config.retrySchedule, {
        attempts: delivery.attempts + 1, status, timedOut: outcome === 'timeout', retryAfter: result.retryAfter
      }, now, this.random)
      next = wait === undefined ? FAILED : { state: 'pending', dueAt: new Date(now + wait) }
      // A retry due before the next poll is looked for when it falls due, not at the poll.
      if (wait !== undefined && wait < this.pollMs) setTimeout(() => this.wake(), wait).unref()
    }
    const record: AttemptRecord = {
      seq: delivery.seq, endpoint: delivery.endpoint, claim: delivery.claim, outcome, at: new Date(now), durationMs: Math.round(result.durationMs), next
    }
    if (status !== undefined) record.status = status
    if (error !== undefined) record.error = error
    this.records.push(record)
    this.queueFlush()
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

  private async disable (endpoint: Endpoint, reason: string): Promise<void> {
    try {
      await this.options.outbox.setEnabled(endpoint.config.name, false, reason)
      this.options.log.warn({ endpoint: endpoint.config.name, reason }, 'webhooks: endpoint disabled')
    } catch (error) {
      this.options.log.warn({ ...failureFields(error), endpoint: endpoint.config.name }, 'webhooks: endpoint could not be disabled')
    }
  }

  /** Writes the results gathered within FLUSH_DELAY_MS together, or at once when FLUSH_BATCH are waiting. */
  private queueFlush (): void {
    if (this.records.length + this.releases.length >= FLUSH_BATCH) {
      clearTimeout(this.flush)
      this.flush = undefined
      this.write()
    } else {
      this.flush ??= setTimeout(() => {
        this.flush = undefined
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

  /** Hands back the deliveries claimed for `endpoint` and waiting for a slot: due at once, unsent, not attempts. */
  private handBack (endpoint: Endpoint): void {
    if (endpoint.waiting.length === 0) return
    for (const { delivery } of endpoint.waiting) this.releases.push(delivery)
    endpoint.waiting = []
    this.queueFlush()
  }

  /**
   * Stops claiming: what is due stays in the outbox for another instance, or for the next start;
   * what waits in the worker is handed back.
   */
  pause (): void {
    this.stopping = true
    this.unlistened ??= this.unlisten?.()
    clearInterval(this.poll)
    clearInterval(this.prune)
    for (const endpoint of this.endpoints.values()) this.handBack(endpoint)
  }

  /**
   * Stops claiming; attempts in flight may finish within `drainMs`, the rest are cut off and their
   * deliveries handed back. Resolves once every result and release is written (or failed to be).
   */
  async stop (drainMs: number): Promise<void> {
    this.pause()
    await this.ticked
    await this.pruning
    const sent = this.allSent()
    await Promise.race([sent, sleep(drainMs, undefined, { ref: false })])
    this.aborted = true
    for (const endpoint of this.endpoints.values()) endpoint.sender.abort()
    await sent
    clearTimeout(this.flush)
    await this.writeAll()
    await Promise.all(this.writes)
    await this.unlistened
    for (const endpoint of this.endpoints.values()) endpoint.sender.close()
  }
}
