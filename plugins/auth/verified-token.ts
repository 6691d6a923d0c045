import type { FastifyInstance, FastifyRequest } from 'fastify'

const DECORATOR = 'plantStoreVerifiedToken'

// Its type is not declared on FastifyRequest: such a declaration would reach every host app's
// requests, where the decorator is not.
type Decorated = Partial<Record<typeof DECORATOR, boolean>>

/** Decorates the scope's requests with whether they carried a credential that verified: none yet. */
export function declareVerifiedToken (fastify: FastifyInstance): void {
  fastify.decorateRequest(DECORATOR, false)
}

/** Notes that the request's credential verified. */
export function markVerified (request: FastifyRequest): void {
  (request as unknown as Decorated)[DECORATOR] = true
}

/**
 * Whether the request carried a credential that verified: a bearer token the plugin accepted, or a
 * request the host's `authenticate` identified. Known from the end of auth's onRequest hook on;
 * false on every route outside the plugin's auth (health, documentation, unknown routes).
 */
export const hasVerifiedToken = (request: FastifyRequest): boolean => (request as unknown as Decorated)[DECORATOR] === true
