import type { onRequestHookHandler } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { InvalidJsonError, PlantNotFoundError } from '../plugins/http/errors.js'
import { storeOf, type PlantStore } from '../plugins/store/index.js'
import { INT64_MESSAGE, integerMessage, validationMessage } from '../plugins/http/validation.js'
import {
  DEFAULT_PAGE_SIZE, MAX_PAGE_BYTES, MAX_PAGE_SIZE, PlantIdSchema, PlantListQuerySchema, STORABLE_TEXT_RULE,
  plantSchemas, ref
} from '../schemas/index.js'
import { guardedRoute, type GuardedRoute, type GuardedRoutesOptions, type RouteScope } from './guarded.js'
import { badRequest, conflict, messageOf, notFound, rateLimitHeaders, success, tooLarge, unsupportedMediaType } from './openapi/answers.js'
import { fitPage } from './page.js'

export interface PlantRoutesOptions extends GuardedRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
  /** The longest name or tag accepted, in characters. */
  maxTextLength: number
}

/** What each plant route is added with: the store, the schemas with this instance's text limit, the shared parts. */
interface PlantRoute {
  store: PlantStore
  schemas: ReturnType<typeof plantSchemas>
  route: GuardedRoute
  options: PlantRoutesOptions
}

const badId = (part: string) => ({ 'An id that is not an int64': validationMessage(part, '/id', INT64_MESSAGE) })

/** `/plants/` matches `/plants/:id` with an empty id: it names no plant, and no route either. */
const emptyIdIsNotFound: onRequestHookHandler = (request, reply, done) => {
  if ((request.params as { id: string }).id === '') reply.callNotFound()
  else done()
}

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
        200: success(schemas.Plant, 'The plant as stored, without its id', rateLimitHeaders),
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
  }, async (request) => store.create(request.body))
}

function readPlantRoute (fastify: RouteScope, { store, schemas, route }: PlantRoute) {
  fastify.get('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config: route.config,
    schema: {
      ...route.docs('Read a plant', 'The plant with this id, without its id (as POST /plants answers).', 'getPlant'),
      params: PlantIdSchema,
      response: {
        200: success(schemas.Plant, 'The plant, without its id', rateLimitHeaders),
        400: badRequest(badId('params')),
        ...route.common,
        404: notFound
      }
    }
  }, async (request) => {
    const plant = await store.get(request.params.id)
    if (plant === undefined) throw new PlantNotFoundError()
    return plant
  })
}

function listPlantsRoute (fastify: RouteScope, { store, schemas, route }: PlantRoute) {
  fastify.get('/plants', {
    config: route.config,
    schema: {
      ...route.docs('List plants', 'Plants in ascending id order, a page at a time: pass the last id of a page as `after` to get ' +
        `the next. A page holds at most \`limit\` plants and at most ${MAX_PAGE_BYTES} bytes of JSON (one plant at ` +
        'least), so it may end early: a page shorter than `limit` is not the end, an empty page is.', 'listPlants'),
      querystring: PlantListQuerySchema,
      response: {
        200: success(schemas.PlantList, 'A page of plants, with their ids', rateLimitHeaders),
        400: badRequest({
          'A limit out of range, or not in decimal digits': validationMessage('querystring', '/limit', integerMessage(1, MAX_PAGE_SIZE)),
          'A cursor that is not an int64': validationMessage('querystring', '/after', INT64_MESSAGE)
        }),
        ...route.common
      }
    }
  }, async (request) => {
    const { limit = DEFAULT_PAGE_SIZE, after } = request.query
    return fitPage(await store.list({ limit, after }), MAX_PAGE_BYTES)
  })
}

function deletePlantRoute (fastify: RouteScope, { store, route }: PlantRoute) {
  fastify.delete('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config: route.config,
    schema: {
      ...route.docs('Delete a plant', 'Deletes a plant; its id may be used again afterwards.', 'deletePlant'),
      params: PlantIdSchema,
      response: {
        204: { type: 'null', description: 'Deleted', headers: rateLimitHeaders },
        400: badRequest(badId('params')),
        ...route.common,
        404: notFound
      }
    }
  }, async (request, reply) => {
    if (!await store.delete(request.params.id)) throw new PlantNotFoundError()
    return reply.code(204).send(null)
  })
}

/** The plant routes, in the order the OpenAPI document lists them. */
const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (fastify, options) => {
  // The schemas with this instance's text limit (strictValidation added them to the scope).
  const plant: PlantRoute = { store: storeOf(fastify), schemas: plantSchemas(options.maxTextLength), route: guardedRoute(fastify, options), options }
  for (const addRoute of [createPlantRoute, readPlantRoute, listPlantsRoute, deletePlantRoute]) addRoute(fastify, plant)
}

export default plantRoutes
