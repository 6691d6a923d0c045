import type { FastifyPluginAsync } from 'fastify'
import auth from '../plugins/auth.js'
import errorHandler from '../plugins/error-handler.js'
import jsonBody from '../plugins/json-body.js'
import store from '../plugins/store/index.js'
import strictValidation from '../plugins/validation.js'
import healthRoutes from '../routes/health.js'
import plantRoutes from '../routes/plants.js'
import { DEFAULT_MAX_TEXT_LENGTH } from '../schemas/index.js'
import { checkOptions, DEFAULT_BODY_LIMIT, type PlantStoreOptions } from './options.js'

/**
 * The plant store as a Fastify plugin. It is deliberately not wrapped in fastify-plugin: its
 * parser, validation, error handling, auth and store stay inside it, and a host app is untouched.
 */
const plantStore: FastifyPluginAsync<PlantStoreOptions> = async (fastify, options) => {
  checkOptions(options)
  const { tokens, bodyLimit = DEFAULT_BODY_LIMIT, maxTextLength = DEFAULT_MAX_TEXT_LENGTH, pressure, rateLimit } = options
  await fastify.register(strictValidation, { maxTextLength })
  await fastify.register(jsonBody)
  // Unknown routes under a prefix of the plugin's own are its to answer; anywhere else (no prefix,
  // '/', or only the prefix of the host's scope it was registered in) they are the host's.
  const ownPrefix = (options as { prefix?: string }).prefix ?? ''
  await fastify.register(errorHandler, { notFound: ownPrefix !== '' && ownPrefix !== '/' })
  await fastify.register(store, { store: options.store, wrap: options.wrapStore })
  if (options.health !== false) await fastify.register(healthRoutes)
  // Auth is registered inside its own scope so that it guards the plant routes and nothing else.
  await fastify.register(async function authenticated (scope) {
    // First shed load, then check the token, then count the request against that token; the
    // optional parts are loaded only when asked for.
    if (pressure) await scope.register((await import('../plugins/load-shedding.js')).default, pressure)
    await scope.register(auth, { tokens })
    if (rateLimit) await scope.register((await import('../plugins/rate-limit.js')).default, rateLimit)
    await scope.register(plantRoutes, { bodyLimit, maxTextLength })
  })
}

/**
 * For @fastify/swagger's `refResolver.buildLocalReference`: a schema with an `$id` (the plugin's
 * are `plant-store.Plant` and so on) keeps it as its component name, others get `def-<n>`.
 */
export function swaggerReferenceName (json: { $id?: unknown }, _baseUri: unknown, _fragment: unknown, index: number): string {
  return typeof json.$id === 'string' ? json.$id : `def-${index}`
}

export default plantStore
export { DEFAULT_BODY_LIMIT, PlantStoreOptionsError, type PlantStoreOptions } from './options.js'
export type { LoadSheddingOptions, RateLimitOptions } from '../plugins/limit-options.js'
export type { ListOptions, PlantStore } from '../plugins/store/index.js'
export { PlantExistsError, StoreUnavailableError } from '../plugins/http-errors.js'
export type { ErrorBody, NewPlant, Plant } from '../schemas/index.js'
export { openapiTags, securitySchemes } from '../schemas/index.js'
