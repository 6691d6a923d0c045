import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StoreUnavailableError } from '../plugins/http/errors.js'
import { sendError } from '../plugins/http/error-handler.js'
import { readinessOf, storeOf } from '../plugins/store/index.js'
import { HealthStatusSchema, type HealthStatus } from '../schemas/index.js'
import { internalError, notReady, operationId, success } from './openapi/answers.js'

const OK: HealthStatus = { status: 'ok' }
const NOT_READY_MESSAGE = new StoreUnavailableError().message

export interface HealthRoutesOptions {
  /** Their OpenAPI tag. */
  tag: string
  /** Route config for the host's plugins, over the default. */
  config?: Record<string, unknown> | undefined
}

// A host's global @fastify/rate-limit skips a route whose config says so: probes are never limited.
const DEFAULT_CONFIG = { rateLimit: false }

/**
 * Whether a route is the liveness probe, which the service's connection limits never refuse: a
 * liveness probe refused under a flood would have the process restarted, which helps no one.
 */
export const isLivenessProbe = (config: unknown) => (config as { livenessProbe?: unknown } | undefined)?.livenessProbe === true

const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (fastify, { tag, config: given }) => {
  const store = storeOf(fastify)
  const readiness = readinessOf(fastify)
  const tags = [tag]
  const config = { ...DEFAULT_CONFIG, ...given }
  fastify.get('/healthz', {
    config: { ...config, livenessProbe: true },
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
  }, async (_request, reply) => {
    // Answered here, not by the error handler: the readiness logs its changes, not every probe.
    if (!await readiness.probe(store)) return sendError(reply, 503, NOT_READY_MESSAGE)
    return OK
  })
}

export default healthRoutes
