import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StoreUnavailableError } from '../plugins/http-errors.js'
import { storeOf } from '../plugins/store/index.js'
import { HEALTH_TAG, HealthStatusSchema, type HealthStatus } from '../schemas/index.js'
import { internalError, notReady, operationId, success } from './documentation.js'

const OK: HealthStatus = { status: 'ok' }
const tags = [HEALTH_TAG]

const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const store = storeOf(fastify)
  fastify.get('/healthz', {
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
      throw new StoreUnavailableError({ cause })
    }
    return OK
  })
}

export default healthRoutes
