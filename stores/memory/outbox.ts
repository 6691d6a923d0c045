import { randomUUID } from 'node:crypto'
import type {
  AttemptRecord, AttemptView, ClaimedDelivery, DeliveryState, EndpointState, EventView, OutboxEventType, OutboxOptions, WebhookOutbox
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
  deliveries: Delivery[]
}

const byDue = (a: { delivery: Delivery }, b: { delivery: Delivery }) => a.delivery.dueAt - b.delivery.dueAt

/**
 * The memory store's outbox: the same events, deliveries and endpoint states as the durable
 * stores keep, in the process's memory. `add` is called in the same synchronous step that stores
 * the plant, so no create is acknowledged without its event.
 */
export function createMemoryOutbox ({ endpoints, payloads, committed }: OutboxOptions) {
  const events = new Map<bigint, StoredEvent>()
  let lastSeq = 0n
  const states = new Map<string, EndpointState>(endpoints.map(({ name }) => [name, { name, enabled: true }]))
  const subscribers = (type: OutboxEventType) => endpoints.filter(({ events }) => events.includes(type)).map(({ name }) => name)
  const created = subscribers('plant.created')
  const deleted = subscribers('plant.deleted')

  /** An event made at `at`: the payload's timestamp and the event's own time are one. */
  function add (type: OutboxEventType, payload: string, to: string[], at: Date) {
    const seq = ++lastSeq
    const dueAt = at.getTime()
    events.set(seq, {
      seq,
      messageId: payloads.messageId(),
      type,
      payload,
      createdAt: at,
      deliveries: to.map((endpoint) => ({ endpoint, state: 'pending', attempts: 0, dueAt, history: [] }))
    })
    committed?.(type, 1)
  }

  const view = (event: StoredEvent): EventView => ({
    seq: event.seq,
    messageId: event.messageId,
    type: event.type,
    payload: event.payload,
    createdAt: event.createdAt,
    deliveries: event.deliveries.map(({ endpoint, state, attempts, dueAt, history }) => ({
      endpoint, state, attempts, ...(state === 'pending' && { dueAt: new Date(dueAt) }), history: [...history]
    }))
  })
  const deliveryOf = (seq: bigint, endpoint: string) => events.get(seq)?.deliveries.find((delivery) => delivery.endpoint === endpoint)

  const outbox: WebhookOutbox = {
    async claim (wants, leaseMs) {
      const now = Date.now()
      const claimed: ClaimedDelivery[] = []
      for (const { endpoint, limit } of wants) {
        if (states.get(endpoint)?.enabled !== true) continue
        const due = [...events.values()].flatMap((event) => event.deliveries
          .filter((delivery) => delivery.endpoint === endpoint && delivery.state === 'pending' && delivery.dueAt <= now)
          .map((delivery) => ({ event, delivery }))).sort(byDue).slice(0, limit)
        const claim = randomUUID()
        for (const { event, delivery } of due) {
          delivery.claim = claim
          delivery.dueAt = now + leaseMs
          claimed.push({ seq: event.seq, messageId: event.messageId, type: event.type, endpoint, payload: event.payload, attempts: delivery.attempts, claim })
        }
      }
      return claimed
    },
    async record (attempts: readonly AttemptRecord[]) {
      // In the order they happened, as the durable stores read an endpoint's streak.
      for (const attempt of attempts.toSorted((a, b) => a.at.getTime() - b.at.getTime())) {
        const delivery = deliveryOf(attempt.seq, attempt.endpoint)
        if (delivery === undefined || delivery.claim !== attempt.claim) continue
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
        const state = states.get(attempt.endpoint)!
        if (attempt.outcome === 'success') {
          state.lastSuccessAt = attempt.at
          state.failingSince = undefined
        } else {
          state.failingSince ??= attempt.at
        }
      }
    },
    async release (claims) {
      for (const { seq, endpoint, claim } of claims) {
        const delivery = deliveryOf(seq, endpoint)
        if (delivery === undefined || delivery.claim !== claim) continue
        delivery.claim = undefined
        delivery.dueAt = Date.now()
      }
    },
    async endpoints () {
      return [...states.values()].map((state) => ({ ...state }))
    },
    async setEnabled (endpoint, enabled, reason) {
      const state = states.get(endpoint)
      if (state === undefined) return false
      state.enabled = enabled
      state.disabledReason = enabled ? undefined : reason
      state.disabledAt = enabled ? undefined : new Date()
      if (enabled) state.failingSince = undefined
      return true
    },
    async events ({ after, limit }) {
      return [...events.values()].filter(({ seq }) => after === undefined || seq > after).slice(0, limit).map(view)
    },
    async event (seq) {
      const event = events.get(seq)
      return event && view(event)
    },
    async redeliver (seq, endpoint, attempts) {
      let count = 0
      for (const delivery of events.get(seq)?.deliveries ?? []) {
        if (endpoint !== undefined && delivery.endpoint !== endpoint) continue
        Object.assign(delivery, { state: 'pending', attempts, dueAt: Date.now(), claim: undefined })
        count++
      }
      return count
    },
    async stats () {
      const now = Date.now()
      return [...states.keys()].map((endpoint) => {
        let pending = 0
        let failed = 0
        let oldest = now
        for (const event of events.values()) {
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
    },
    async prune (before) {
      let removed = 0
      for (const [seq, event] of events) {
        if (event.createdAt >= before || event.deliveries.some(({ state }) => state === 'pending')) continue
        events.delete(seq)
        removed++
      }
      return removed
    }
  }
  return {
    outbox,
    created (plant: { id: bigint, name: string, tag?: string }) {
      const at = new Date()
      if (created.length > 0) add('plant.created', payloads.created(plant, at), created, at)
    },
    deleted (id: bigint) {
      const at = new Date()
      if (deleted.length > 0) add('plant.deleted', payloads.deleted(id, at), deleted, at)
    }
  }
}
