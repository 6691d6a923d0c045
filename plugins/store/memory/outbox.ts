import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../../http/clock.js'
import {
  subscribersOf, traced, type AttemptRecord, type AttemptView, type ClaimedDelivery, type DeliveryState, type EndpointState, type EventView,
  type FeedPosition, type FeedRead, type FeedRow, type OutboxEventType, type OutboxOptions, type Subscribers, type WebhookOutbox
} from '../outbox.js'

interface Delivery {
  endpoint: string
  state: DeliveryState
  attempts: number
  dueAt: number
  claim?: string
  history: AttemptView[]
}

interface StoredEvent {
  seq: bigint
  messageId: string
  type: OutboxEventType
  payload: string
  createdAt: Date
  traceContext: string | undefined
  deliveries: Delivery[]
}

const byDue = (a: { delivery: Delivery }, b: { delivery: Delivery }) => a.delivery.dueAt - b.delivery.dueAt

const viewOf = (event: StoredEvent): EventView => ({
  seq: event.seq,
  messageId: event.messageId,
  type: event.type,
  payload: event.payload,
  createdAt: event.createdAt,
  deliveries: event.deliveries.map(({ endpoint, state, attempts, dueAt, history }) => ({
    endpoint, state, attempts, ...(state === 'pending' && { dueAt: new Date(dueAt) }), history: [...history]
  }))
})

/** The memory outbox's events, deliveries and endpoint states. */
class MemoryOutbox implements WebhookOutbox {
  readonly #events = new Map<bigint, StoredEvent>()
  #lastSeq = 0n
  #pruned = 0n
  readonly #feedId = randomUUID()
  readonly #states: Map<string, EndpointState>
  readonly #to: Subscribers
  readonly #options: OutboxOptions
  readonly #clock: Clock

  constructor (options: OutboxOptions) {
    this.#options = options
    this.#clock = options.clock ?? systemClock
    this.#states = new Map(options.endpoints.map(({ name }) => [name, { name, enabled: true }]))
    this.#to = subscribersOf(options.endpoints)
  }

  /** An event made at `at`, when an endpoint takes its type: the payload's timestamp and the event's own time are one. */
  add (type: OutboxEventType, payloadOf: (at: Date) => string) {
    const at = new Date(this.#clock.now())
    if (this.#to[type].length === 0 && this.#options.feed !== true) return
    const seq = ++this.#lastSeq
    const dueAt = at.getTime()
    this.#events.set(seq, {
      seq,
      messageId: this.#options.payloads.messageId(),
      type,
      payload: payloadOf(at),
      createdAt: at,
      traceContext: this.#options.traceContext?.(),
      deliveries: this.#to[type].map((endpoint) => ({ endpoint, state: 'pending', attempts: 0, dueAt, history: [] }))
    })
    this.#options.committed?.(type, 1)
  }

  #deliveryOf (seq: bigint, endpoint: string) {
    return this.#events.get(seq)?.deliveries.find((delivery) => delivery.endpoint === endpoint)
  }

  async claim (wants: Parameters<WebhookOutbox['claim']>[0], leaseMs: number) {
    const now = this.#clock.now()
    const claimed: ClaimedDelivery[] = []
    for (const { endpoint, limit } of wants) {
      if (this.#states.get(endpoint)?.enabled !== true) continue
      const due = [...this.#events.values()].flatMap((event) => event.deliveries
        .filter((delivery) => delivery.endpoint === endpoint && delivery.state === 'pending' && delivery.dueAt <= now)
        .map((delivery) => ({ event, delivery }))).sort(byDue).slice(0, limit)
      const claim = randomUUID()
      for (const { event, delivery } of due) {
        delivery.claim = claim
        delivery.dueAt = now + leaseMs
        claimed.push({
          seq: event.seq,
          messageId: event.messageId,
          type: event.type,
          endpoint,
          payload: event.payload,
          attempts: delivery.attempts,
          claim,
          ...traced(event.traceContext),
          feed: { id: this.#feedId, position: { xid: 0n, seq: event.seq } }
        })
      }
    }
    return claimed
  }

  async record (attempts: readonly AttemptRecord[]) {
    // In the order they happened, as the durable stores read an endpoint's streak.
    for (const attempt of attempts.toSorted((a, b) => a.at.getTime() - b.at.getTime())) this.#recordOne(attempt)
  }

  #recordOne (attempt: AttemptRecord) {
    const delivery = this.#deliveryOf(attempt.seq, attempt.endpoint)
    if (delivery === undefined || delivery.claim !== attempt.claim) return
    delivery.claim = undefined
    delivery.attempts++
    delivery.history.push({
      at: attempt.at,
      outcome: attempt.outcome,
      durationMs: attempt.durationMs,
      ...(attempt.status !== undefined && { status: attempt.status }),
      ...(attempt.error !== undefined && { error: attempt.error })
    })
    delivery.state = attempt.next.state
    if (attempt.next.state === 'pending') delivery.dueAt = attempt.next.dueAt.getTime()
    const state = this.#states.get(attempt.endpoint)!
    if (attempt.outcome === 'success') {
      state.lastSuccessAt = attempt.at
      state.failingSince = undefined
    } else {
      state.failingSince ??= attempt.at
    }
  }

  async release (claims: Parameters<WebhookOutbox['release']>[0]) {
    for (const { seq, endpoint, claim } of claims) {
      const delivery = this.#deliveryOf(seq, endpoint)
      if (delivery === undefined || delivery.claim !== claim) continue
      delivery.claim = undefined
      delivery.dueAt = this.#clock.now()
    }
  }

  async endpoints () {
    return [...this.#states.values()].map((state) => ({ ...state }))
  }

  async setEnabled (endpoint: string, enabled: boolean, reason?: string) {
    const state = this.#states.get(endpoint)
    if (state === undefined) return false
    state.enabled = enabled
    state.disabledReason = enabled ? undefined : reason
    state.disabledAt = enabled ? undefined : new Date(this.#clock.now())
    if (enabled) state.failingSince = undefined
    return true
  }

  async events ({ after, limit }: Parameters<WebhookOutbox['events']>[0]) {
    return [...this.#events.values()].filter(({ seq }) => after === undefined || seq > after).slice(0, limit).map(viewOf)
  }

  async event (seq: bigint) {
    const event = this.#events.get(seq)
    return event && viewOf(event)
  }

  async redeliver (seq: bigint, endpoint: string | undefined, attempts: number) {
    let count = 0
    for (const delivery of this.#events.get(seq)?.deliveries ?? []) {
      if (endpoint !== undefined && delivery.endpoint !== endpoint) continue
      Object.assign(delivery, { state: 'pending', attempts, dueAt: this.#clock.now(), claim: undefined })
      count++
    }
    return count
  }

  async stats () {
    const now = this.#clock.now()
    return [...this.#states.keys()].map((endpoint) => {
      let pending = 0
      let failed = 0
      let oldest = now
      for (const event of this.#events.values()) {
        for (const delivery of event.deliveries) {
          if (delivery.endpoint !== endpoint) continue
          if (delivery.state === 'failed') failed++
          if (delivery.state !== 'pending') continue
          pending++
          oldest = Math.min(oldest, event.createdAt.getTime())
        }
      }
      return { endpoint, pending, failed, oldestPendingMs: now - oldest }
    })
  }

  async prune (before: Date) {
    let removed = 0
    for (const [seq, event] of this.#events) {
      if (event.createdAt >= before || event.deliveries.some(({ state }) => state === 'pending')) continue
      this.#events.delete(seq)
      if (seq > this.#pruned) this.#pruned = seq
      removed++
    }
    return removed
  }

  async readFeed (after: FeedPosition | undefined, limit: number): Promise<FeedRead> {
    const from = after?.seq ?? this.#pruned
    const rows: FeedRow[] = []
    // By seq from the position on: a follower at the head looks at no older event.
    for (let seq = from + 1n; seq <= this.#lastSeq && rows.length < limit; seq++) {
      const event = this.#events.get(seq)
      if (event !== undefined) rows.push({ position: { xid: 0n, seq }, type: event.type, payload: event.payload })
    }
    const head = { xid: 0n, seq: this.#lastSeq }
    return { id: this.#feedId, pruned: { xid: 0n, seq: this.#pruned }, head, latest: head, rows }
  }
}

/**
 * The memory store's outbox: the same events, deliveries and endpoint states as the durable
 * stores keep, in the process's memory. `created` and `deleted` are called in the same
 * synchronous step that stores the plant, so no create is acknowledged without its event.
 */
export function createMemoryOutbox (options: OutboxOptions) {
  const outbox = new MemoryOutbox(options)
  const { payloads } = options
  return {
    outbox: outbox as WebhookOutbox,
    created (plant: { id: bigint, name: string, tag?: string }) {
      outbox.add('plant.created', (at) => payloads.created(plant, at))
    },
    deleted (id: bigint) {
      outbox.add('plant.deleted', (at) => payloads.deleted(id, at))
    },
    updated (plant: { id: bigint, name: string, tag?: string }) {
      outbox.add('plant.updated', (at) => payloads.updated(plant, at))
    }
  }
}
