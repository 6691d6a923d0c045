import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { onRequestHookHandler } from 'fastify'
import { InvalidJsonError, PlantNotFoundError } from '../plugins/http/errors.js'
import { storeOf } from '../plugins/store/index.js'
import { INT64_MESSAGE, integerMessage, validationMessage } from '../plugins/http/validation.js'
import {
  DEFAULT_PAGE_SIZE, MAX_PAGE_BYTES, MAX_PAGE_SIZE, PlantIdSchema, PlantListQuerySchema, STORABLE_TEXT_RULE,
  plantSchemas, ref
} from '../schemas/index.js'
import {
  badRequest, conflict, hostUnauthorized, internalError, messageOf, notFound, operationId, rateLimitHeaders, success, tooLarge,
  tooManyRequests, unauthorized, unavailable, unsupportedMediaType
} from './openapi/answers.js'
import { fitPage } from './page.js'

export interface PlantRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
  /** The longest name or tag accepted, in characters. */
  maxTextLength: number
  /** Their OpenAPI tag. */
  tag: string
  /** The security scheme they name; none: the document's own security applies (the host's auth). */
  securityScheme?: string | undefined
  /** Whether the host's `authenticate` guards them rather than the plugin's tokens. */
  hostAuth: boolean
  /** Route config for the host's plugins. */
  config: Record<string, unknown>
}
const badId = (part: string) => ({ 'An id that is not an int64': validationMessage(part, '/id', INT64_MESSAGE) })

/** `/plants/` matches `/plants/:id` with an empty id: it names no plant, and no route either. */
const emptyIdIsNotFound: onRequestHookHandler = (request, reply, done) => {
  if ((request.params as { id: string }).id === '') reply.callNotFound()
  else done()
}

const plantRoutes: FastifyPluginAsyncTypebox<PlantRoutesOptions> = async (fastify, options) => {
  const { bodyLimit, maxTextLength, tag, securityScheme, hostAuth, config } = options
  const store = storeOf(fastify)
  const tags = [tag]
  const security = securityScheme === undefined ? undefined : [{ [securityScheme]: [] }]
  // The schemas with this instance's text limit (strictValidation added them to the scope).
  const { Plant: PlantSchema, NewPlant: NewPlantSchema, PlantList: PlantListSchema } = plantSchemas(maxTextLength)
  const id = (name: string) => operationId(fastify.prefix, name)
  // Every plant route answers these, besides its own.
  const common = { 401: hostAuth ? hostUnauthorized : unauthorized, 429: tooManyRequests, 500: internalError, 503: unavailable }

  fastify.post('/plants', {
    config,
    bodyLimit,
    schema: {
      summary: 'Create a plant',
      description: 'Creates a new plant in the store. A 200 means the plant is stored durably; ' +
        'an id that exists already is a 409 and leaves the stored plant unchanged.',
      operationId: id('createPlant'),
      tags,
      ...(security && { security }),
      body: ref(NewPlantSchema),
      response: {
        // The serializer writes only Plant's fields: the id never appears in the reply.
        200: success(PlantSchema, 'The plant as stored, without its id', rateLimitHeaders),
        400: badRequest({
          ...badId('body'),
          'A name too long': validationMessage('body', '/name', `must NOT have more than ${maxTextLength} characters`),
          'Text a store cannot keep exactly': validationMessage('body', '/name', STORABLE_TEXT_RULE),
          'A body that is not JSON': messageOf(InvalidJsonError)
        }),
        ...common,
        409: conflict,
        413: tooLarge(bodyLimit),
        415: unsupportedMediaType
      }
    }
  }, async (request) => store.create(request.body))

  fastify.get('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config,
    schema: {
      summary: 'Read a plant',
      description: 'The plant with this id, without its id (as POST /plants answers).',
      operationId: id('getPlant'),
      tags,
      ...(security && { security }),
      params: PlantIdSchema,
      response: {
        200: success(PlantSchema, 'The plant, without its id', rateLimitHeaders),
        400: badRequest(badId('params')),
        ...common,
        404: notFound
      }
    }
  }, async (request) => {
    const plant = await store.get(request.params.id)
    if (plant === undefined) throw new PlantNotFoundError()
    return plant
  })

  fastify.get('/plants', {
    config,
    schema: {
      summary: 'List plants',
      description: 'Plants in ascending id order, a page at a time: pass the last id of a page as `after` to get ' +
        `the next. A page holds at most \`limit\` plants and at most ${MAX_PAGE_BYTES} bytes of JSON (one plant at ` +
        'least), so it may end early: a page shorter than `limit` is not the end, an empty page is.',
      operationId: id('listPlants'),
      tags,
      ...(security && { security }),
      querystring: PlantListQuerySchema,
      response: {
        200: success(PlantListSchema, 'A page of plants, with their ids', rateLimitHeaders),
        400: badRequest({
          'A limit out of range, or not in decimal digits': validationMessage('querystring', '/limit', integerMessage(1, MAX_PAGE_SIZE)),
          'A cursor that is not an int64': validationMessage('querystring', '/after', INT64_MESSAGE)
        }),
        ...common
      }
    }
  }, async (request) => {
    const { limit = DEFAULT_PAGE_SIZE, after } = request.query
    return fitPage(await store.list({ limit, after }), MAX_PAGE_BYTES)
  })

  fastify.delete('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config,
    schema: {
      summary: 'Delete a plant',
      description: 'Deletes a plant; its id may be used again afterwards.',
      operationId: id('deletePlant'),
      tags,
      ...(security && { security }),
      params: PlantIdSchema,
      response: {
        204: { type: 'null', description: 'Deleted', headers: rateLimitHeaders },
        400: badRequest(badId('params')),
        ...common,
        404: notFound
      }
    }
  }, async (request, reply) => {
    if (!await store.delete(request.params.id)) throw new PlantNotFoundError()
    return reply.code(204).send(null)
  })
}

export default plantRoutes
