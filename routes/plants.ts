import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { InvalidJsonError, PlantNotFoundError, PreconditionFailedError } from '../plugins/http/errors.js'
import { storeOf } from '../plugins/store/index.js'
import { validationMessage } from '../plugins/http/validation.js'
import { IfMatchHeadersSchema, IfNoneMatchHeadersSchema, PlantIdSchema, STORABLE_TEXT_RULE, plantSchemas, ref } from '../schemas/index.js'
import { ifMatchPrecondition, noneMatchMatches, withEtag } from './conditional.js'
import { guardedRoute, type RouteScope } from './guarded.js'
import {
  badRequest, conflict, messageOf, notFound, notModified, plantHeaders, preconditionFailed, rateLimitHeaders, success, tooLarge, unsupportedMediaType
} from './openapi/answers.js'
import { listPlantsRoute } from './plant-list.js'
import { badId, emptyIdIsNotFound, type PlantRoute, type PlantRoutesOptions } from './plant-route.js'
import { updatePlantRoute } from './plant-update.js'

export type { PlantRoutesOptions }

function createPlantRoute (fastify: RouteScope, { store, schemas, route, options: { bodyLimit, maxTextLength } }: PlantRoute) {
  fastify.post('/plants', {
    config: route.config,
    bodyLimit,
    schema: {
      ...route.docs('Create a plant', 'Creates a new plant in the store. A 200 means the plant is stored durably; ' +
        'an id that exists already is a 409 and leaves the stored plant unchanged.', 'createPlant'),
      body: ref(schemas.NewPlant),
      response: {
        // The serializer writes only Plant's fields: the id never appears in the reply.
        200: success(schemas.Plant, 'The plant as stored, without its id', plantHeaders),
        400: badRequest({
          ...badId('body'),
          'A name too long': validationMessage('body', '/name', `must NOT have more than ${maxTextLength} characters`),
          'Text a store cannot keep exactly': validationMessage('body', '/name', STORABLE_TEXT_RULE),
          'A body that is not JSON': messageOf(InvalidJsonError)
        }),
        ...route.common,
        409: conflict,
        413: tooLarge(bodyLimit),
        415: unsupportedMediaType
      }
    }
  }, async (request, reply) => withEtag(reply, await store.create(request.body)))
}

function readPlantRoute (fastify: RouteScope, { store, schemas, route }: PlantRoute) {
  fastify.get('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config: route.config,
    schema: {
      ...route.docs('Read a plant', 'The plant with this id, without its id (as POST /plants answers), and its ETag. ' +
        'With If-None-Match naming that ETag (or `*`), 304 without a body: the copy the client has is current.', 'getPlant'),
      params: PlantIdSchema,
      headers: IfNoneMatchHeadersSchema,
      response: {
        200: success(schemas.Plant, 'The plant, without its id', plantHeaders),
        304: notModified,
        400: badRequest(badId('params')),
        ...route.common,
        404: notFound
      }
    }
  }, async (request, reply) => {
    const plant = await store.get(request.params.id)
    if (plant === undefined) throw new PlantNotFoundError()
    withEtag(reply, plant)
    const ifNoneMatch = request.headers['if-none-match']
    if (ifNoneMatch !== undefined && noneMatchMatches(ifNoneMatch, reply.getHeader('etag') as string | undefined)) return reply.code(304).send()
    return plant
  })
}

function deletePlantRoute (fastify: RouteScope, { store, route }: PlantRoute) {
  fastify.delete('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config: route.config,
    schema: {
      ...route.docs('Delete a plant', 'Deletes a plant; its id may be used again afterwards. With If-Match, only while the plant ' +
        'is at one of its ETags: otherwise 412, and it is kept.', 'deletePlant'),
      params: PlantIdSchema,
      headers: IfMatchHeadersSchema,
      response: {
        204: { type: 'null', description: 'Deleted', headers: rateLimitHeaders },
        400: badRequest(badId('params')),
        ...route.common,
        404: notFound,
        412: preconditionFailed
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const precondition = ifMatchPrecondition(request.headers['if-match'])
    // A store without update keeps no revisions: no ETag can match one of its plants.
    const deleted = precondition !== undefined && store.update === undefined
      ? (await store.get(id) === undefined ? false : 'precondition-failed')
      : await store.delete(id, precondition)
    if (deleted === 'precondition-failed') throw new PreconditionFailedError()
    if (!deleted) throw new PlantNotFoundError()
    return reply.code(204).send(null)
  })
}

/** The plant routes, in the order the OpenAPI document lists them. */
const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (fastify, options) => {
  // The schemas with this instance's text limit (strictValidation added them to the scope).
  const plant: PlantRoute = { store: storeOf(fastify), schemas: plantSchemas(options.maxTextLength), route: guardedRoute(fastify, options), options }
  for (const addRoute of [createPlantRoute, readPlantRoute, updatePlantRoute, listPlantsRoute, deletePlantRoute]) addRoute(fastify, plant)
}

export default plantRoutes
