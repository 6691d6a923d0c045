import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlantNotFoundError } from '../plugins/http-errors.js'
import {
  ErrorSchema, NewPlantSchema, PlantIdSchema, PlantListQuerySchema, PlantListSchema, PlantSchema, ref
} from '../schemas/index.js'

export interface PlantRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
}

const failure = (description: string) => ref(ErrorSchema, description)
const badRequest = failure('The request is invalid: its body, id or query')
const unauthorized = failure('No valid bearer token')
const notFound = failure('No plant has this id')
const tooManyRequests = failure('Too many requests for this token (when a rate limit is configured)')
const unavailable = failure('The store is unavailable or the service overloaded: try again later')
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
        200: ref(PlantSchema, 'The plant as stored, without its id'),
        400: badRequest,
        401: unauthorized,
        409: failure('A plant with this id exists already; it is unchanged'),
        413: failure('The body is larger than the limit'),
        415: failure('The body is not application/json'),
        429: tooManyRequests,
        503: unavailable
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
      response: {
        200: ref(PlantSchema, 'The plant, without its id'),
        400: badRequest,
        401: unauthorized,
        404: notFound,
        429: tooManyRequests,
        503: unavailable
      }
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
      response: {
        200: ref(PlantListSchema, 'A page of plants, with their ids'),
        400: badRequest,
        401: unauthorized,
        429: tooManyRequests,
        503: unavailable
      }
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
      response: {
        204: { type: 'null', description: 'Deleted' },
        400: badRequest,
        401: unauthorized,
        404: notFound,
        429: tooManyRequests,
        503: unavailable
      }
    }
  }, async (request, reply) => {
    if (!await store.delete(request.params.id)) throw new PlantNotFoundError()
    return reply.code(204).send(null)
  })
}

export default plantRoutes
