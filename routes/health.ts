import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StoreUnavailableError } from '../errors/index.js'
import { storeOf } from '../stores/index.js'
import { HealthStatusSchema, type HealthStatus } from '../schemas/index.js'
import { internalError, notReady, operationId, success } from './documentation.js'

const OK: HealthStatus = { status: 'ok' }

export interface HealthRoutesOptions {
  /** Their OpenAPI tag. */
  tag: string
  /** Route config for the host's plugins, over the default. */
  config?: Record<string, unknown> | undefined
}

// A host's global @fastify/rate-limit skips a route whose config says so: probes are never limited.
const DEFAULT_CONFIG = { rateLimit: false }

const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (fastify, { tag, config: given }) => {
  const store = storeOf(fastify)
  const tags = [tag]
  const config = { ...DEFAULT_CONFIG, ...given }
  fastify.get('/healthz', {
    config,
    schema: {
      summary: 'Liveness: the process runs',
      description: 'Answers 200 while the process runs, whatever the state of the store: restart the service ' +
        'when it stops answering. Public (no token), never load-shed nor rate limited.',
      operationId: operationId(fastify.prefix, 'getHealth'),
      tags,
      security: [],
      response: { 200: success(HealthStatusSchema, 'The process runs'), 500: internalError }
    }
  }, async () => OK)

  fastify.get('/readyz', {
    config,
    schema: {
      summary: 'Readiness: the store answers',
      description: 'Answers 200 when the store answers and 503 when it does not: send plant requests to this ' +
        'instance only while it answers 200. Public (no token), never load-shed nor rate limited.',
      operationId: operationId(fastify.prefix, 'getReadiness'),
      tags,
      security: [],
      response: {
        200: success(HealthStatusSchema, 'The store answers: the service can take requests'),
        500: internalError,
        503: notReady
      }
    }
  }, async () => {
    try {
      await store.ping()
    } catch (cause) {
      // The guarded store's 503 as it is: wrapped again, the log line would say it twice.
      throw (cause as { statusCode?: unknown }).statusCode === 503 ? cause : new StoreUnavailableError({ cause })
    }
    return OK
  })
}

export default healthRoutes
