import type { ClaimedDelivery } from '../../store/outbox.js'
import type { AttemptResult } from './attempt.js'

/** The span of one delivery attempt: the traceparent its request carries, and its end. */
export interface AttemptSpan {
  traceparent: string | undefined
  end (result: AttemptResult): void
}

/**
 * Webhook tracing, when the service has tracing on (service/observe/tracing/): nothing of OpenTelemetry is
 * loaded here, the service hands these in.
 */
export interface WebhookTracing {
  /** The current trace context, a W3C traceparent: stored with each event (OutboxOptions.traceContext). */
  traceContext (): string | undefined
  /** Starts the span of an attempt at `delivery`, linked to the trace its event was written in. */
  attempt (delivery: ClaimedDelivery): AttemptSpan
  /**
   * How a delivery thread makes its attempts' spans itself (functions cannot cross into a thread):
   * the module it then starts from (it sets tracing up and runs thread/thread-side.ts), and the
   * plain data that module is given (DeliveryThreadData.tracing). Without it, attempts made in a
   * thread have no span.
   */
  thread?: { entry: URL, data: unknown }
}

/**
 * One attempt through `send`, in its own span when tracing is on: the request then carries the
 * span's traceparent, and the span ends with the attempt's result (`send` never rejects).
 */
export function tracedAttempt (tracing: WebhookTracing | undefined, delivery: ClaimedDelivery, headers: Record<string, string>,
  send: (headers: Record<string, string>) => Promise<AttemptResult>): Promise<AttemptResult> {
  if (tracing === undefined) return send(headers)
  const span = tracing.attempt(delivery)
  return send(span.traceparent === undefined ? headers : { ...headers, traceparent: span.traceparent }).then((result) => {
    span.end(result)
    return result
  })
}
