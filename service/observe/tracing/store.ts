import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api'
import type { PlantStore } from '../../../src/service-api.js'

/** The table the store keeps its plants in, as the spans name it. */
const COLLECTION = 'plants'

/**
 * The same store, each operation in a client span of its own (child of the request's), named and
 * described as OpenTelemetry's database conventions say: the system and the operation, never a
 * value (no id, name or tag). `system`: sqlite, postgresql, or memory.
 */
export function tracedStore (store: PlantStore, tracer: Tracer, system: string): PlantStore {
  const traced = <A extends unknown[], R>(operation: string, run: (...args: A) => Promise<R>) => (...args: A): Promise<R> =>
    tracer.startActiveSpan(`${operation} ${COLLECTION}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': system, 'db.system': system, 'db.operation.name': operation, 'db.collection.name': COLLECTION }
    }, (span) => run(...args).then((result) => {
      span.end()
      return result
    }, (error: unknown) => {
      // The guarded store fails only with its errors, each with the status it answers (409, 503...);
      // their messages stay out.
      span.setAttribute('error.type', String((error as { statusCode: number }).statusCode))
      span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
      throw error
    }))
  return {
    create: traced('INSERT', (plant) => store.create(plant)),
    get: traced('SELECT', (id) => store.get(id)),
    list: traced('SELECT', (options) => store.list(options)),
    delete: traced('DELETE', (id, precondition) => store.delete(id, precondition)),
    // The optional methods, where the store has them: without, the routes answer 501.
    ...(store.update && { update: traced('UPDATE', store.update.bind(store)) }),
    ...(store.listTagged && { listTagged: traced('SELECT', store.listTagged.bind(store)) }),
    // Readiness probes: their own request spans are enough.
    ping: () => store.ping(),
    close: () => store.close()
  }
}
