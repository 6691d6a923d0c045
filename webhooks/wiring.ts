import type { FastifyBaseLogger } from 'fastify'
import type { OutboxOpener } from '../stores/index.js'
import type { AttemptOutcome, EventPayloads, OutboxEventType, WebhookOutbox } from '../stores/outbox.js'
import type { WebhooksConfig } from './config.js'
import { plantCreatedPayload, plantDeletedPayload } from './payload.js'
import { messageId } from './signing.js'
import type { WebhookTracing } from './tracing.js'
import { DeliveryWorker } from './worker.js'

/** What the service's metrics learn of webhooks. */
export interface WebhookObserver {
  /** Events written, by type, as their commits succeed. */
  event (type: OutboxEventType, count: number): void
  attempt (endpoint: string, outcome: AttemptOutcome, seconds: number): void
  /** The outbox, read when metrics are scraped. */
  outbox (outbox: WebhookOutbox): void
  /** Traces: each event keeps its create's trace context, each attempt has a span linked to it. */
  tracing?: WebhookTracing | undefined
}

/** What the store writes for each event, inside the plant's own transaction. */
const payloads: EventPayloads = {
  created: (plant, at) => plantCreatedPayload(plant, at),
  deleted: (id, at) => plantDeletedPayload(id, at),
  messageId
}

/**
 * The route of an event, end to end:
 * 1. store commit: a create or delete writes its events into the outbox in the same commit (payloads);
 * 2. outbox: once that commit succeeds, `committed` runs;
 * 3. worker wake-up: `committed` wakes the worker instead of it waiting for its next poll;
 * 4. delivery: the worker claims due events from the outbox and sends them (worker.ts, send.ts);
 * 5. outcome recorded: it writes each attempt's outcome back to the outbox (record, release).
 */
export async function wireEvents (open: NonNullable<OutboxOpener>, config: WebhooksConfig, log: FastifyBaseLogger, observer?: WebhookObserver):
Promise<{ outbox: WebhookOutbox, worker: DeliveryWorker }> {
  // The worker is built on the outbox, which needs the wake-up first: a holder breaks the loop.
  const wake = { worker: undefined as DeliveryWorker | undefined }
  const outbox = await open({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
    payloads,
    ...(observer?.tracing && { traceContext: observer.tracing.traceContext }),
    committed (type, count) {
      observer?.event(type, count)
      wake.worker?.wake()
    }
  })
  const worker = new DeliveryWorker({ outbox, config, log, onAttempt: observer && ((...args) => observer.attempt(...args)), tracing: observer?.tracing })
  wake.worker = worker
  observer?.outbox(outbox)
  return { outbox, worker }
}
