import type { FastifyInstance, onResponseHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { statSync } from 'node:fs'
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { SeriesHistogram, type HistogramSeries } from './series-histogram.js'
import { addRouteHook } from '../edge/route-hooks.js'
import { sqliteFiles, type PlantStore } from '../../src/service-api.js'

const METRICS_PATH = '/metrics'
const UNKNOWN_ROUTE = 'unknown'

/** The size of a file, 0 when there is none. */
function sizeOf (path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/**
 * The service's metrics, in a registry of its own (a host app's prom-client is left alone).
 * `sqliteFile`: the SQLite store's database, whose write-ahead log's size is reported.
 */
export function createMetrics ({ sqliteFile }: { sqliteFile?: string } = {}) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  if (sqliteFile !== undefined) {
    const [, wal] = sqliteFiles(sqliteFile)
    // Read when scraped: a log that keeps growing means a reader holds an old snapshot.
    new Gauge({ // eslint-disable-line no-new
      name: 'plant_store_sqlite_wal_bytes',
      help: 'Size of the SQLite store\'s write-ahead log (-wal file), bytes',
      registers: [registry],
      collect () { this.set(sizeOf(wal)) }
    })
  }
  const storeDuration = new SeriesHistogram({
    name: 'plant_store_operation_duration_seconds',
    help: 'Time a store operation takes, by operation and outcome',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5],
    registers: [registry]
  })
  const plantsStored = storeDuration.series('create', 'ok')
  return {
    registry,
    // Its _count series is the request count by method, route and status.
    requestDuration: new SeriesHistogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route and status',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry]
    }),
    storeDuration,
    // Read when scraped: a create that succeeds is a plant created.
    plantsCreated: new Counter({
      name: 'plant_store_plants_created_total',
      help: 'Plants created since the process started',
      registers: [registry],
      collect () {
        this.reset()
        this.inc(plantsStored.count)
      }
    })
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/** The same store, timing every operation by its outcome: ok, or the status of its error. */
export function instrumentStore (store: PlantStore, { storeDuration }: Metrics): PlantStore {
  const timed = <A extends unknown[], R>(operation: string, run: (...args: A) => Promise<R>) => {
    const ok = storeDuration.series(operation, 'ok')
    return async (...args: A): Promise<R> => {
      const start = performance.now()
      try {
        const result = await run(...args)
        ok.observe((performance.now() - start) / 1000)
        return result
      } catch (error) {
        // The guarded store fails only with its three errors, each with a status.
        storeDuration.series(operation, String((error as { statusCode: number }).statusCode)).observe((performance.now() - start) / 1000)
        throw error
      }
    }
  }
  return {
    create: timed('create', (plant) => store.create(plant)),
    get: timed('get', (id) => store.get(id)),
    list: timed('list', (options) => store.list(options)),
    delete: timed('delete', (id, precondition) => store.delete(id, precondition)),
    // The optional methods, where the store has them: without, the routes answer 501.
    ...(store.update && { update: timed('update', store.update.bind(store)) }),
    ...(store.listTagged && { listTagged: timed('listTagged', store.listTagged.bind(store)) }),
    ping: timed('ping', () => store.ping()),
    close: () => store.close()
  }
}

/** An onResponse hook observing the requests of one route into their method and status series. */
function requestObserver (requestDuration: Metrics['requestDuration'], route: string): onResponseHookHandler {
  const byMethod = new Map<string, Map<number, HistogramSeries>>()
  return (request, reply, done) => {
    let byStatus = byMethod.get(request.method)
    if (byStatus === undefined) byMethod.set(request.method, byStatus = new Map())
    let series = byStatus.get(reply.statusCode)
    if (series === undefined) {
      byStatus.set(reply.statusCode, series = requestDuration.series(request.method, route, String(reply.statusCode)))
    }
    series.observe(reply.elapsedTime / 1000)
    done()
  }
}

/** GET /metrics: the registry, public, in Prometheus text format. */
export function metricsRoute (fastify: FastifyInstance, registry: Registry) {
  fastify.get(METRICS_PATH, { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
}

export interface MetricsPluginOptions {
  metrics: Metrics
  /** Serve GET /metrics on this app; false when a listener of its own serves it. */
  serve?: boolean
}

/** Times every request of the app and serves the metrics (unless told not to). */
export default fp<MetricsPluginOptions>(async function metricsPlugin (fastify: FastifyInstance, { metrics, serve = true }) {
  const { registry, requestDuration } = metrics
  // Each route observes with a hook of its own, which knows the route: looking the route up for
  // each request (request.routeOptions builds an object) cost more than the observation.
  fastify.addHook('onRoute', (route) => addRouteHook(route, 'onResponse', requestObserver(requestDuration, route.url)))
  const unknownRoute = requestObserver(requestDuration, UNKNOWN_ROUTE)
  fastify.addHook('onResponse', function observeUnknownRoute (request, reply, done) {
    if (request.is404) return unknownRoute.call(this, request, reply, done)
    done()
  })
  if (serve) metricsRoute(fastify, registry)
}, { name: 'plant-store-metrics' })
