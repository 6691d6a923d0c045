import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ErrorSchema, NewPlantSchema, PlantSchema, ref } from '../schemas/index.js'

export interface PlantRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
}

const error = ref(ErrorSchema)

const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (fastify, { bodyLimit }) => {
  fastify.post('/plants', {
    bodyLimit,
    schema: {
      summary: 'Create a plant',
      description: 'Creates a new plant in the store',
      tags: ['plants'],
      operationId: 'createPlant',
      security: [{ bearerAuth: [] }],
      body: ref(NewPlantSchema),
      response: {
        // The serializer writes only Plant's fields: the id never appears in the reply.
        200: ref(PlantSchema),
        400: error,
        401: error,
        409: error,
        413: error,
        415: error,
        503: error
      }
    }
  }, async (request) => fastify.plantStore.create(request.body))
}

export default plantRoutes
