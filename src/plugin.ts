import type { FastifyPluginAsync } from 'fastify'
import auth from '../plugins/auth.js'
import errorHandler from '../plugins/error-handler.js'
import jsonBody from '../plugins/json-body.js'
import loadShedding, { type LoadSheddingOptions } from '../plugins/load-shedding.js'
import perTokenRateLimit, { type RateLimitOptions } from '../plugins/rate-limit.js'
import store, { type PlantStore } from '../plugins/store/index.js'
import strictValidation from '../plugins/validation.js'
import healthRoutes from '../routes/health.js'
import plantRoutes from '../routes/plants.js'
import { sharedSchemas } from '../schemas/index.js'

export const DEFAULT_BODY_LIMIT = 1024 * 1024

export interface PlantStoreOptions {
  /** Accepted bearer tokens. */
  tokens: readonly string[]
  /** A store URL (`memory:`, `sqlite:<path>`, `postgres://…`), opened and closed with the plugin, or a store you own. */
  store: string | PlantStore
  /** Wraps the store the routes use, e.g. to time its operations (the service adds its metrics). */
  wrapStore?: (store: PlantStore) => PlantStore
  /** The largest request body accepted, in bytes (default 1 MiB). */
  bodyLimit?: number
  /** Load shedding on the plant routes: 503 with Retry-After while overloaded (default: off). */
  pressure?: LoadSheddingOptions
  /** A limit of requests per token on the plant routes: 429 beyond it (default: none). */
  rateLimit?: RateLimitOptions
}

/**
 * The plant store as a Fastify plugin. It is deliberately not wrapped in fastify-plugin: its
 * parser, validation, error handling, auth and store stay inside it, and a host app is untouched.
 */
const plantStore: FastifyPluginAsync<PlantStoreOptions & { prefix?: string }> = async (fastify, options) => {
  const { tokens, bodyLimit = DEFAULT_BODY_LIMIT } = options
  for (const schema of sharedSchemas) fastify.addSchema(schema)
  await fastify.register(strictValidation)
  await fastify.register(jsonBody)
  // Unknown routes under the plugin's own prefix are its to answer; without one they are the host's.
  await fastify.register(errorHandler, { notFound: Boolean(options.prefix) })
  await fastify.register(store, { store: options.store, wrap: options.wrapStore })
  await fastify.register(healthRoutes)
  // Auth is registered inside its own scope so that it guards the plant routes and nothing else.
  await fastify.register(async function authenticated (scope) {
    // First shed load, then check the token, then count the request against that token.
    await scope.register(loadShedding, options.pressure ?? {})
    await scope.register(auth, { tokens })
    if (options.rateLimit) await scope.register(perTokenRateLimit, options.rateLimit)
    await scope.register(plantRoutes, { bodyLimit })
  })
}

export default plantStore
export type { PlantStore } from '../plugins/store/index.js'
export { securitySchemes } from '../schemas/index.js'
