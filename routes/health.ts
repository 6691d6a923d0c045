import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StoreUnavailableError } from '../plugins/http-errors.js'
import { ErrorSchema, HealthStatusSchema, ref, type HealthStatus } from '../schemas/index.js'

const OK: HealthStatus = { status: 'ok' }

const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/healthz', {
    schema: {
      summary: 'Liveness: the process runs',
      operationId: 'getHealth',
      tags: ['health'],
      security: [],
      response: { 200: ref(HealthStatusSchema, 'The process runs') }
    }
  }, async () => OK)

  fastify.get('/readyz', {
    schema: {
      summary: 'Readiness: the store answers',
      operationId: 'getReadiness',
      tags: ['health'],
      security: [],
      response: {
        200: ref(HealthStatusSchema, 'The store answers: the service can take requests'),
        503: ref(ErrorSchema, 'The store does not answer')
      }
    }
  }, async () => {
    try {
      await fastify.plantStore.ping()
    } catch (cause) {
      throw new StoreUnavailableError({ cause })
    }
    return OK
  })
}

export default healthRoutes
