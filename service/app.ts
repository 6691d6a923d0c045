import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Server } from 'node:http'
import Fastify, { LogController, type FastifyHttpOptions } from 'fastify'
import compression from './edge/compression.js'
import connections, { type ConnectionsOptions } from './edge/connections.js'
import cors from './edge/cors.js'
import docsPlugin from './docs/index.js'
import {
  deliveryOnly, errorHandler, handleClientError, handleFrameworkError, plantStore, sqliteFileOf, trackMethods, type PlantStore, type PlantStoreOptions
} from '../src/service-api.js'
import httpProtocol, { type HttpProtocolOptions } from './edge/http-protocol.js'
import { lazyChildLogger } from './observe/lazy-child-logger.js'
import metricsPlugin, { createMetrics, instrumentStore } from './observe/metrics.js'
import { buildMetricsListener } from './observe/metrics-listener.js'
import { webhookMetrics } from './observe/webhook-metrics.js'
import requestLog from './observe/request-log.js'
import securityHeaders from './edge/security-headers.js'
import type { Tracing } from './observe/tracing/index.js'

export type ServerOptions = FastifyHttpOptions<Server> & ConnectionsOptions & HttpProtocolOptions & {
  /** The origins whose pages may call the API from a browser (CORS_ORIGINS); none by default. */
  corsOrigins?: readonly string[]
  /** Serve /documentation, Swagger UI and the OpenAPI document (DOCS); true by default. */
  docs?: boolean
  /** Serve /metrics on a listener of its own (METRICS_PORT), `app.metricsListener`, not on the app. */
  metricsListener?: boolean
  /** Traces of requests, store operations and webhook attempts (OTEL_*); none by default. */
  tracing?: Tracing | undefined
  /**
   * Serve the API (API=on), true by default; false: a delivery-only instance (API=off), its
   * webhooks delivered where `webhooks.delivery` says, health and metrics, no plant or admin route.
   */
  api?: boolean
}

/**
 * Builds the service, ready to listen but not listening: tests and the server entry use this same
 * factory. `serverOptions` carries what only the entry knows (logger, connection limits).
 */
export async function buildApp (options: PlantStoreOptions, serverOptions: ServerOptions = {}) {
  const {
    maxConnections, maxTokenless, minBodyRate, bodyRateGrace, clock, maxHeadersCount, corsOrigins = [], docs = true, metricsListener = false, tracing,
    api = true, ...fastifyOptions
  } = serverOptions
  const app = Fastify({
    bodyLimit: options.bodyLimit,
    // Every failure in the Error shape, also those Fastify and Node answer before any route runs.
    clientErrorHandler: handleClientError,
    frameworkErrors: handleFrameworkError,
    // service/edge/connections.ts answers a request read while closing, in the Error shape.
    return503OnClosing: false,
    // Fastify's two lines per request cost ~40 % of a create's CPU; service/observe/request-log.ts logs one
    // line per request instead, at debug.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's child logger is built on its first line, not for every request.
    childLoggerFactory: lazyChildLogger,
    ...fastifyOptions,
    // service/edge/http-protocol.ts answers a request without Host in the Error shape, not Node.
    http: { requireHostHeader: false, ...fastifyOptions.http }
  }).withTypeProvider<TypeBoxTypeProvider>()

  if (tracing !== undefined) {
    app.log.info(tracing.target, 'tracing on: spans are sent over OTLP')
    // The first onClose hook runs last: the spans of the last requests and attempts are sent, within a bound.
    app.addHook('onClose', async () => {
      if (await tracing.shutdown() === 'dropped') {
        app.log.warn(tracing.target, 'tracing: some spans could not be sent (the collector refused them, was unreachable or too slow) and were dropped')
      }
    })
    // Before any route: it instruments each as it is added.
    await app.register(tracing.plugin)
  }
  const metrics = createMetrics({ sqliteFile: sqliteFileOf(options.store) })
  const listener = metricsListener ? await buildMetricsListener(metrics, app.log) : null
  app.decorate('metricsListener', listener)
  // The first onClose hook runs last: metrics can be scraped until the app has drained and closed its store.
  if (listener !== null) app.addHook('onClose', () => listener.close())
  // Before any route: it notes the methods of each, to answer the others 405 (OPTIONS too: CORS
  // answers preflights in its hook, before any route).
  const methodNotAllowed = trackMethods(app, { options: true })

  // First, so that every answer carries them, even one refused by the next two.
  await app.register(securityHeaders)
  // Its hook decides whether a request is taken in at all (not while shutting down).
  await app.register(connections, { maxConnections, maxTokenless, minBodyRate, bodyRateGrace, clock })
  await app.register(httpProtocol, { maxHeadersCount })
  // Error-shaped answers for unknown routes and for anything outside the plant-store plugin.
  await app.register(errorHandler, { notFound: true })
  await app.register(requestLog)
  if (corsOrigins.length > 0) await app.register(cors, { origins: corsOrigins })
  // Before the routes: it decides, as each is added, which answers may be compressed.
  await app.register(compression)
  await app.register(metricsPlugin, { metrics, serve: !metricsListener })
  const wrapStore = (store: PlantStore) => instrumentStore(tracing === undefined ? store : tracing.wrapStore(store), metrics)
  const observeWebhooks = { ...webhookMetrics(metrics.registry), tracing: tracing?.webhooks }
  if (!api) {
    await app.register(deliveryOnly, { store: options.store, webhooks: options.webhooks!, wrapStore, observeWebhooks })
  } else {
    // Before the routes: swagger collects them as they are added.
    if (docs) await app.register(docsPlugin, { maxTextLength: options.maxTextLength })
    await app.register(plantStore, { ...options, wrapStore, ...(options.webhooks && { observeWebhooks }) })
  }
  // Last: every route is added.
  await app.register(methodNotAllowed)
  await app.ready()
  return app
}
