import type { FastifyInstance, FastifyPluginAsync, FastifySchema } from 'fastify'
import auth from '../plugins/auth/index.js'
import errorHandler, { handleNotFound } from '../plugins/http/error-handler.js'
import jsonBody from '../plugins/http/json-body.js'
import { trackMethods } from '../plugins/http/method-not-allowed.js'
import { DEFAULT_AUTH_FAILURE_LIMIT } from '../plugins/http/limit-options.js'
import store from '../plugins/store/index.js'
import strictValidation from '../plugins/http/validation.js'
import healthRoutes from '../routes/health.js'
import changesRoutes from '../routes/changes.js'
import feed from '../plugins/feed/index.js'
import { resolveFeed } from '../plugins/feed/settings.js'
import { DEFAULT_RETENTION } from '../plugins/webhooks/settings.js'
import plantRoutes from '../routes/plants.js'
import { openapiNames } from '../routes/openapi/names.js'
import { DEFAULT_BODY_LIMIT, DEFAULT_MAX_TEXT_LENGTH } from '../schemas/index.js'
import { checkDrivers } from '../plugins/store/drivers.js'
import { checkOptions, PlantStoreOptionsError, type PlantStoreOptions } from './options.js'

/**
 * Registers routes, turning a clash with a route the host declared already (Fastify's "Method
 * 'GET' already declared for route …", which names no plugin) into a line that says what to change.
 */
async function claim (register: Promise<unknown> | PromiseLike<unknown>, fix: string) {
  try {
    await register
  } catch (error) {
    const clash = (error as { code?: string }).code === 'FST_ERR_DUPLICATED_ROUTE' &&
      /^Method '([\s\S]+?)' already declared for route '([^']*)'/.exec((error as Error).message)
    if (!clash) throw error
    // One method, or the list of all of them (a catch-all route).
    const method = /^[A-Z]+$/.test(clash[1]) ? clash[1] : 'a route at'
    throw new PlantStoreOptionsError(`plant-store: ${method} ${clash[2]} is declared already by the host: ${fix}`, { cause: error })
  }
}

const OTHER_PREFIX = 'register plant-store under another prefix (its prefix option)'

/**
 * Unknown routes under the plugin's prefix, answered by the plugin when the host asks for it
 * (notFound: true). Routes, not setNotFoundHandler: Fastify allows one not-found handler per
 * prefix, and a second one at a prefix the host shares crashes the process after registration.
 */
async function notFoundRoutes (fastify: FastifyInstance) {
  // Kept out of the OpenAPI document (@fastify/swagger's `hide`, which FastifySchema lacks without it).
  const hidden = { schema: { hide: true } as FastifySchema }
  fastify.all('/', hidden, handleNotFound)
  fastify.all('/*', hidden, handleNotFound)
}

/**
 * The plant store as a Fastify plugin. It is deliberately not wrapped in fastify-plugin: its
 * parser, validation, error handling, auth and store stay inside it, and a host app is untouched.
 */
const plantStore: FastifyPluginAsync<PlantStoreOptions> = async (fastify, options) => {
  checkOptions(options)
  const { bodyLimit = DEFAULT_BODY_LIMIT, maxTextLength = DEFAULT_MAX_TEXT_LENGTH, pressure, rateLimit, routeConfig } = options
  const names = openapiNames(options.openapi)
  if (typeof options.store === 'string') checkDrivers(options.store)
  await fastify.register(strictValidation, { maxTextLength })
  await fastify.register(jsonBody)
  // Errors the host's own hooks raise on the plant routes go to the host's error handler.
  await fastify.register(errorHandler, { hostErrors: options.hostErrors !== 'plugin' })
  await fastify.register(store, { store: options.store, postgres: options.postgres, wrap: options.wrapStore })
  // On by default: every create, update and delete writes its event for GET /plants/changes (off: nothing more is written).
  const feedConfig = resolveFeed(options.feed)
  if (feedConfig) await fastify.register(feed, { config: feedConfig, webhooks: options.webhooks !== undefined, handle: options.feedHandle })
  // Loaded only when set: without webhooks no delivery, worker or timer exists.
  if (options.webhooks) {
    // With the feed on, events are kept for the longer of both retentions.
    const retention = Math.max(options.webhooks.retention ?? DEFAULT_RETENTION, feedConfig?.retention ?? 0)
    await fastify.register((await import('../plugins/webhooks/index.js')).default, {
      webhooks: { ...options.webhooks, retention }, observer: options.observeWebhooks, store: options.store, postgres: options.postgres
    })
  }
  // Before the routes: it notes the methods of each, to answer the others 405.
  const methodNotAllowed = trackMethods(fastify, { yieldToHost: true })
  if (options.health !== false) {
    await claim(fastify.register(healthRoutes, { tag: names.healthTag, config: routeConfig?.health }),
      'set the option health: false to keep the host\'s, or ' + OTHER_PREFIX)
  }
  const hostAuth = options.authenticate !== undefined
  // With the host's auth, the routes name the host's scheme if it says which (else the document's own applies).
  const securityScheme = hostAuth ? options.openapi?.securityScheme : names.securityScheme
  // With a limit of its own, the plant routes tell a host's global @fastify/rate-limit to skip them:
  // one limit, one set of X-RateLimit-* headers.
  const config = { ...(rateLimit && { rateLimit: false }), ...routeConfig?.plants }
  // Auth is registered inside its own scope so that it guards the plant routes and nothing else.
  await claim(fastify.register(async function authenticated (scope) {
    // First shed load, then authenticate, then count the request against its identity; the
    // optional parts are loaded only when asked for.
    if (pressure) await scope.register((await import('../plugins/http/load-shedding.js')).default, pressure)
    await scope.register(auth, {
      tokens: options.tokens,
      authenticate: options.authenticate,
      // The host's authentication has limits of its own, if any: the plugin adds one only when asked.
      failureLimit: options.authFailureLimit ?? (options.authenticate === undefined && DEFAULT_AUTH_FAILURE_LIMIT)
    })
    if (rateLimit) await scope.register((await import('../plugins/auth/rate-limit.js')).default, rateLimit)
    // Before the plant routes: /plants/changes is no plant id.
    await scope.register(changesRoutes, { maxTextLength, tag: names.plantsTag, securityScheme, hostAuth, config })
    await scope.register(plantRoutes, { bodyLimit, maxTextLength, tag: names.plantsTag, securityScheme, hostAuth, config })
    if (options.webhooks) await scope.register((await import('../routes/webhook-admin.js')).default, { tag: names.plantsTag, securityScheme, hostAuth, config })
  }), OTHER_PREFIX)
  await fastify.register(methodNotAllowed)
  // Unknown routes under the prefix are the host's, unless it hands them to the plugin. After the
  // 405s, which leave alone any method a route of the host's (such as a wildcard) answers already.
  if (options.notFound === true) {
    await claim(fastify.register(notFoundRoutes), 'set the option notFound: false to leave unknown routes to the host, or ' + OTHER_PREFIX)
  }
}

/**
 * For @fastify/swagger's `refResolver.buildLocalReference`: a schema with an `$id` (the plugin's
 * are `plant-store.Plant` and so on) keeps it as its component name, others get `def-<n>`.
 */
export function swaggerReferenceName (json: { $id?: unknown }, _baseUri: unknown, _fragment: unknown, index: number): string {
  return typeof json.$id === 'string' ? json.$id : `def-${index}`
}

export default plantStore
export { PlantStoreOptionsError, type PlantStoreOptions, type PostgresOptions } from './options.js'
export { DEFAULT_BODY_LIMIT } from '../schemas/index.js'
export type { Authenticate, Identity } from '../plugins/auth/index.js'
export type { LoadSheddingOptions, RateLimitOptions, WindowLimit } from '../plugins/http/limit-options.js'
export { DEFAULT_AUTH_FAILURE_LIMIT } from '../plugins/http/limit-options.js'
export type { ListOptions, PgPool, PlantStore } from '../plugins/store/index.js'
export { PlantExistsError, StoreUnavailableError } from '../plugins/http/errors.js'
export type { ErrorBody, NewPlant, Plant } from '../schemas/index.js'
export { DEFAULT_OPENAPI_NAMES, openapiDeclarations, openapiTags, securitySchemes, type OpenapiNames } from '../routes/openapi/names.js'
export { openapiWebhooks } from '../routes/openapi/webhooks.js'
export type { PlantCreatedEvent, PlantDeletedEvent } from '../schemas/index.js'
export { createFeedHandle, type FeedChange, type FeedHandle, type FeedHandleOptions } from '../plugins/feed/handle.js'
export { FeedCursorGoneError, FeedCursorInvalidError } from '../plugins/feed/errors.js'
