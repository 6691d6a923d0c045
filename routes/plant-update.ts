import { IdMismatchError, InvalidJsonError, PlantNotFoundError, PreconditionFailedError, UpdateUnsupportedError } from '../plugins/http/errors.js'
import { toPlant } from '../plugins/store/types.js'
import { validationMessage } from '../plugins/http/validation.js'
import { IfMatchHeadersSchema, PlantIdSchema, STORABLE_TEXT_RULE, ref } from '../schemas/index.js'
import { ifMatchPrecondition, withEtag } from './conditional.js'
import type { RouteScope } from './guarded.js'
import {
  badRequest, messageOf, notFound, notImplemented, plantHeaders, preconditionFailed, success, tooLarge, unsupportedMediaType
} from './openapi/answers.js'
import { badId, emptyIdIsNotFound, type PlantRoute } from './plant-route.js'

/** PUT /plants/{id}: a stored plant's name and tag replaced, under If-Match when sent. */
export function updatePlantRoute (fastify: RouteScope, { store, schemas, route, options: { bodyLimit, maxTextLength } }: PlantRoute) {
  fastify.put('/plants/:id', {
    onRequest: emptyIdIsNotFound,
    config: route.config,
    bodyLimit,
    schema: {
      ...route.docs('Update a plant', 'Replaces the name and tag of a stored plant (a tag left out is removed); PUT never creates ' +
        'one: a missing id is a 404. A 200 means the change is stored durably. With If-Match, only while the plant is at one of ' +
        'its ETags: otherwise 412, and nothing changes (of two clients holding one ETag, one succeeds).', 'updatePlant'),
      params: PlantIdSchema,
      headers: IfMatchHeadersSchema,
      body: ref(schemas.PlantUpdate),
      response: {
        200: success(schemas.Plant, 'The plant as stored now, without its id', plantHeaders),
        400: badRequest({
          ...badId('params'),
          'An id in the body that is not the path\'s': messageOf(IdMismatchError),
          'A name too long': validationMessage('body', '/name', `must NOT have more than ${maxTextLength} characters`),
          'Text a store cannot keep exactly': validationMessage('body', '/name', STORABLE_TEXT_RULE),
          'A body that is not JSON': messageOf(InvalidJsonError)
        }),
        ...route.common,
        404: notFound,
        412: preconditionFailed,
        413: tooLarge(bodyLimit),
        415: unsupportedMediaType,
        501: notImplemented(UpdateUnsupportedError)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const { id: bodyId, name, tag } = request.body
    if (bodyId !== undefined && bodyId !== id) throw new IdMismatchError()
    if (store.update === undefined) throw new UpdateUnsupportedError()
    const result = await store.update(id, toPlant(name, tag), ifMatchPrecondition(request.headers['if-match']))
    if (result === 'not-found') throw new PlantNotFoundError()
    if (result === 'precondition-failed') throw new PreconditionFailedError()
    return withEtag(reply, result)
  })
}
