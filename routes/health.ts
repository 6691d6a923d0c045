import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { StoreUnavailableError } from '../plugins/http-errors.js'
import { ErrorSchema, HealthStatusSchema, ref, type HealthStatus } from '../schemas/index.js'

const OK: HealthStatus = { status: 'ok' }

const healthRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/healthz', {
    schema: {
      summary: 'Liveness: the process runs',
      tags: ['health'],
      response: { 200: ref(HealthStatusSchema) }
    }
  }, async () => OK)

  fastify.get('/readyz', {
    schema: {
      summary: 'Readiness: the store answers',
      tags: ['health'],
      response: { 200: ref(HealthStatusSchema), 503: ref(ErrorSchema) }
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
