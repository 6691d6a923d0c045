import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import type { PlantStore } from './store/index.js'

const METRICS_PATH = '/metrics'

/** The service's metrics, in a registry of its own (a host app's prom-client is left alone). */
export function createMetrics () {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return {
    registry,
    // Its _count series is the request count by method, route and status.
    requestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route and status',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry]
    }),
    storeDuration: new Histogram({
      name: 'plant_store_operation_duration_seconds',
      help: 'Time a store operation takes, by operation and outcome',
      labelNames: ['operation', 'outcome'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5],
      registers: [registry]
    }),
    plantsCreated: new Counter({
      name: 'plant_store_plants_created_total',
      help: 'Plants created since the process started',
      registers: [registry]
    })
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/** The same store, timing every operation; a create that succeeds counts a plant. */
export function instrumentStore (store: PlantStore, { storeDuration, plantsCreated }: Metrics): PlantStore {
  const timed = <A extends unknown[], R>(operation: string, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const end = storeDuration.startTimer({ operation })
      try {
        const result = await run(...args)
        end({ outcome: 'ok' })
        return result
      } catch (error) {
        end({ outcome: String((error as { statusCode?: number }).statusCode ?? 500) })
        throw error
      }
    }
  return {
    create: timed('create', async (plant) => {
      const created = await store.create(plant)
      plantsCreated.inc()
      return created
    }),
    get: timed('get', (id) => store.get(id)),
    list: timed('list', (options) => store.list(options)),
    delete: timed('delete', (id) => store.delete(id)),
    ping: timed('ping', () => store.ping()),
    close: () => store.close()
  }
}

/** Times every request of the app and serves the metrics, public, in Prometheus text format. */
export default fp<{ metrics: Metrics }>(async function metricsPlugin (fastify: FastifyInstance, { metrics }) {
  const { registry, requestDuration } = metrics
  // One labelled child per method, route and status, found by a string key: prom-client would
  // otherwise hash the label object on every request.
  const series = new Map<string, Histogram.Internal<'method' | 'route' | 'status_code'>>()
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown'
    const key = `${request.method} ${route} ${reply.statusCode}`
    let child = series.get(key)
    if (child === undefined) {
      child = requestDuration.labels(request.method, route, String(reply.statusCode))
      series.set(key, child)
    }
    child.observe(reply.elapsedTime / 1000)
    done()
  })
  fastify.get(METRICS_PATH, { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
}, { name: 'plant-store-metrics' })
