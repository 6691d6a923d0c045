import type { FastifyRequest } from 'fastify'
import { TagListUnsupportedError } from '../plugins/http/errors.js'
import { integerMessage, INT64_MESSAGE, validationMessage } from '../plugins/http/validation.js'
import { DEFAULT_PAGE_SIZE, MAX_HEADER_FIELD_LENGTH, MAX_PAGE_BYTES, MAX_PAGE_SIZE, PlantListQuerySchema } from '../schemas/index.js'
import type { RouteScope } from './guarded.js'
import { badRequest, notImplemented, rateLimitHeaders, success } from './openapi/answers.js'
import { fitPage } from './page.js'
import type { PlantRoute } from './plant-route.js'

const linkHeader = {
  Link: {
    type: 'string',
    pattern: '^<[^>]+>; rel="next"$',
    maxLength: 2 * MAX_HEADER_FIELD_LENGTH,
    description: 'RFC 8288: `<…>; rel="next"`, the URL of the next page (this one\'s query, `after` its last id), on a page after which ' +
      'more plants follow; absent on the last page',
    example: '</plants?limit=100&after=100>; rel="next"'
  }
}

/** The next page's link: the request's path and query, `after` set to the last id of this page. */
function nextLink (request: FastifyRequest, after: bigint): string {
  const [path, query = ''] = request.url.split('?', 2)
  const params = new URLSearchParams(query)
  params.set('after', String(after))
  return `<${path}?${params.toString()}>; rel="next"`
}

export function listPlantsRoute (fastify: RouteScope, { store, schemas, route }: PlantRoute) {
  fastify.get('/plants', {
    config: route.config,
    schema: {
      ...route.docs('List plants', 'Plants in ascending id order, a page at a time; with `tag`, only those with exactly that tag. ' +
        'A page holds at most `limit` plants and at most ' +
        `${MAX_PAGE_BYTES} bytes of JSON (one plant at least). A page after which more follow has a Link header with ` +
        'rel="next", the next page\'s URL: follow it until a page has none. (By hand: pass the last id of a page as `after`.)', 'listPlants'),
      querystring: PlantListQuerySchema,
      response: {
        200: success(schemas.PlantList, 'A page of plants, with their ids', { ...rateLimitHeaders, ...linkHeader }),
        400: badRequest({
          'A limit out of range, or not in decimal digits': validationMessage('querystring', '/limit', integerMessage(1, MAX_PAGE_SIZE)),
          'A cursor that is not an int64': validationMessage('querystring', '/after', INT64_MESSAGE)
        }),
        ...route.common,
        501: notImplemented(TagListUnsupportedError)
      }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_SIZE, after, tag } = request.query
    if (tag !== undefined && store.listTagged === undefined) throw new TagListUnsupportedError()
    // One plant past the page says whether another page follows, so the last page has no Link.
    const bounds = { limit: limit + 1, after }
    const found = tag === undefined ? await store.list(bounds) : await store.listTagged!(tag, bounds)
    const page = fitPage(found.slice(0, limit), MAX_PAGE_BYTES)
    if (page.length < found.length) reply.header('link', nextLink(request, page.at(-1)!.id))
    return page
  })
}
