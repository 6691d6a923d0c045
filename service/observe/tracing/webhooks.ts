import { threadId } from 'node:worker_threads'
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Link, type Tracer } from '@opentelemetry/api'
import type { WebhookTracing } from '../../../src/service-api.js'

/** The traceparent of `activeContext`'s span, when it has one. */
function traceparentOf (activeContext: typeof ROOT_CONTEXT): string | undefined {
  const carrier: { traceparent?: string } = {}
  propagation.inject(activeContext, carrier)
  return carrier.traceparent
}

/** The span context a stored traceparent names, as a link; none when there is none (or it cannot be read). */
export function linksTo (traceparent: string | undefined): Link[] {
  if (traceparent === undefined) return []
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }))
  return linked === undefined ? [] : [{ context: linked }]
}

/**
 * Each event keeps the trace context of the create (or delete) that wrote it; each attempt is a
 * client span of a trace of its own, linked to that one (it runs long after the request, and may
 * be one of many), and its request carries the attempt's traceparent.
 */
export function webhookTracing (tracer: Tracer): Omit<WebhookTracing, 'thread'> {
  return {
    traceContext: () => traceparentOf(context.active()),
    attempt (delivery) {
      const span = tracer.startSpan(`webhook ${delivery.type}`, {
        kind: SpanKind.CLIENT,
        root: true,
        links: linksTo(delivery.traceContext),
        attributes: {
          'http.request.method': 'POST',
          'plant_store.webhook.endpoint': delivery.endpoint,
          'plant_store.webhook.message_id': delivery.messageId,
          'plant_store.webhook.attempt': delivery.attempts + 1,
          // The thread that made it: the delivery thread's id, 0 for the main thread (in-process delivery).
          'thread.id': threadId
        }
      })
      return {
        traceparent: traceparentOf(trace.setSpan(ROOT_CONTEXT, span)),
        end (result) {
          span.setAttribute('plant_store.webhook.outcome', result.outcome)
          if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status)
          if (result.outcome !== 'success') {
            span.setAttribute('error.type', result.error ?? String(result.status))
            span.setStatus({ code: SpanStatusCode.ERROR })
          }
          span.end()
        }
      }
    }
  }
}
