import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { errorHandler, handleClientError, handleFrameworkError, trackMethods } from '../../src/service-api.js'
import { metricsRoute, type Metrics } from './metrics.js'
import securityHeaders from '../edge/security-headers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The listener of its own that serves /metrics (METRICS_PORT), not listening yet; null when the app serves it. */
    metricsListener: FastifyInstance | null
  }
}

/** The text logged once it listens, beside the app's "Server listening at …". */
export const metricsListening = (address: string) => `Metrics listening at ${address}`

/**
 * A second server for GET /metrics alone, so that it can stay off the public network. Its answers
 * are those of the app: the Error shape for anything else (404, 405), the same security headers.
 */
export async function buildMetricsListener (metrics: Metrics, logger: FastifyBaseLogger): Promise<FastifyInstance> {
  const listener = Fastify({
    loggerInstance: logger.child({ listener: 'metrics' }),
    clientErrorHandler: handleClientError,
    frameworkErrors: handleFrameworkError,
    logController: new LogController({ disableRequestLogging: true })
  })
  const methodNotAllowed = trackMethods(listener, { options: true })
  await listener.register(securityHeaders)
  await listener.register(errorHandler, { notFound: true })
  metricsRoute(listener, metrics.registry)
  await listener.register(methodNotAllowed)
  await listener.ready()
  return listener
}
