import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Server } from 'node:http'
import Fastify, { LogController, type FastifyHttpOptions } from 'fastify'
import docs from '../plugins/docs.js'
import errorHandler, { handleClientError, handleFrameworkError } from '../plugins/error-handler.js'
import metricsPlugin, { createMetrics, instrumentStore } from '../plugins/metrics.js'
import requestLog from '../plugins/request-log.js'
import securityHeaders from '../plugins/security-headers.js'
import type { Config } from './config.js'
import plantStore, { type PlantStoreOptions } from './plugin.js'

export type ServerOptions = FastifyHttpOptions<Server>

/** The app's options as the configuration gives them: what the server entry and the tests use. */
export function appOptions (config: Config, tokens: readonly string[]): PlantStoreOptions {
  return {
    tokens,
    store: config.DATABASE_URL,
    bodyLimit: config.BODY_LIMIT,
    pressure: {
      maxEventLoopDelay: config.PRESSURE_MAX_EVENT_LOOP_DELAY,
      maxEventLoopUtilization: config.PRESSURE_MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: config.PRESSURE_MAX_HEAP_USED_BYTES
    },
    rateLimit: config.RATE_LIMIT_MAX > 0 ? { max: config.RATE_LIMIT_MAX, timeWindow: config.RATE_LIMIT_WINDOW } : undefined
  }
}

/** Limits that make slow or oversized clients let go of the server's sockets. */
export function connectionOptions (config: Config): ServerOptions {
  return {
    connectionTimeout: config.CONNECTION_TIMEOUT,
    requestTimeout: config.REQUEST_TIMEOUT,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT,
    http: { headersTimeout: config.HEADERS_TIMEOUT, maxHeaderSize: config.MAX_HEADER_SIZE }
  }
}

/**
 * Builds the service, ready to listen but not listening: tests and the server entry use this same
 * factory. `serverOptions` carries what only the entry knows (logger, connection limits).
 */
export async function buildApp (options: PlantStoreOptions, serverOptions: ServerOptions = {}) {
  const app = Fastify({
    bodyLimit: options.bodyLimit,
    // Every failure in the Error shape, also those Fastify and Node answer before any route runs.
    clientErrorHandler: handleClientError,
    frameworkErrors: handleFrameworkError,
    // While closing, a request on a busy keep-alive connection is still served (then the
    // connection closes) rather than answered with Fastify's own 503 body.
    return503OnClosing: false,
    // Fastify's two lines per request cost ~40 % of a create's CPU; plugins/request-log.ts logs one
    // line per request instead, at debug.
    logController: new LogController({ disableRequestLogging: true }),
    ...serverOptions
  }).withTypeProvider<TypeBoxTypeProvider>()

  const metrics = createMetrics()

  // Fastify closes the connections that are idle when closing starts; a keep-alive connection busy
  // then would stay open after its answer until the client or KEEP_ALIVE_TIMEOUT let go, holding
  // the exit back. Until the server has closed, connections are let go as soon as they are idle.
  app.addHook('preClose', (done) => {
    if (app.server.listening) {
      const sweep = setInterval(() => app.server.closeIdleConnections(), 20).unref()
      app.server.once('close', () => clearInterval(sweep))
    }
    done()
  })

  // Error-shaped answers for unknown routes and for anything outside the plant-store plugin.
  await app.register(errorHandler, { notFound: true })
  await app.register(requestLog)
  await app.register(securityHeaders)
  await app.register(metricsPlugin, { metrics })
  // Before the routes: swagger collects them as they are added.
  await app.register(docs)
  await app.register(plantStore, { ...options, wrapStore: (store) => instrumentStore(store, metrics) })
  await app.ready()
  return app
}
