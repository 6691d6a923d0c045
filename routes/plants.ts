import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlantNotFoundError } from '../plugins/http-errors.js'
import {
  ErrorSchema, NewPlantSchema, PlantIdSchema, PlantListQuerySchema, PlantListSchema, PlantSchema, ref
} from '../schemas/index.js'

export interface PlantRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
}

const error = ref(ErrorSchema)
const security = [{ bearerAuth: [] }]
const tags = ['plants']

const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (fastify, { bodyLimit }) => {
  const store = fastify.plantStore

  fastify.post('/plants', {
    bodyLimit,
    schema: {
      summary: 'Create a plant',
      description: 'Creates a new plant in the store',
      operationId: 'createPlant',
      tags,
      security,
      body: ref(NewPlantSchema),
      response: {
        // The serializer writes only Plant's fields: the id never appears in the reply.
        200: ref(PlantSchema), 400: error, 401: error, 409: error, 413: error, 415: error, 503: error
      }
    }
  }, async (request) => store.create(request.body))

  fastify.get('/plants/:id', {
    schema: {
      summary: 'Read a plant',
      operationId: 'getPlant',
      tags,
      security,
      params: PlantIdSchema,
      response: { 200: ref(PlantSchema), 400: error, 401: error, 404: error, 503: error }
    }
  }, async (request) => {
    const plant = await store.get(request.params.id)
    if (plant === undefined) throw new PlantNotFoundError()
    return plant
  })

  fastify.get('/plants', {
    schema: {
      summary: 'List plants',
      description: 'Plants in ascending id order, a page at a time: pass the last id of a page as `after` to get the next.',
      operationId: 'listPlants',
      tags,
      security,
      querystring: PlantListQuerySchema,
      response: { 200: ref(PlantListSchema), 400: error, 401: error, 503: error }
    }
  }, async (request) => store.list(request.query))

  fastify.delete('/plants/:id', {
    schema: {
      summary: 'Delete a plant',
      description: 'Deletes a plant; its id may be used again afterwards.',
      operationId: 'deletePlant',
      tags,
      security,
      params: PlantIdSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, 400: error, 401: error, 404: error, 503: error }
    }
  }, async (request, reply) => {
    if (!await store.delete(request.params.id)) throw new PlantNotFoundError()
    return reply.code(204).send(null)
  })
}

export default plantRoutes
