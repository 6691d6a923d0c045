import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { hostUnauthorized, internalError, operationId, tooManyRequests, unauthorized, unavailable } from './openapi/answers.js'

/** The Fastify instance a plugin of TypeBox routes is given: what each function that adds a route takes. */
export type RouteScope = Parameters<FastifyPluginAsyncTypebox>[0]

/** The options of routes behind the plugin's authentication (the plant routes, the webhook admin). */
export interface GuardedRoutesOptions {
  /** Their OpenAPI tag. */
  tag: string
  /** The security scheme they name; none: the document's own security applies (the host's auth). */
  securityScheme?: string | undefined
  /** Whether the host's `authenticate` guards them rather than the plugin's tokens. */
  hostAuth: boolean
  /** Route config for the host's plugins. */
  config: Record<string, unknown>
}

/** What every route behind the authentication shares: its config, the head of its schema, the answers each may give. */
export function guardedRoute (fastify: RouteScope, { tag, securityScheme, hostAuth, config }: GuardedRoutesOptions) {
  const tags = [tag]
  const security = securityScheme === undefined ? undefined : [{ [securityScheme]: [] }]
  return {
    config,
    /** The schema's summary, description, operationId (under the prefix), tag and security. */
    docs: (summary: string, description: string, name: string) =>
      ({ summary, description, operationId: operationId(fastify.prefix, name), tags, ...(security && { security }) }),
    /** The answers every one of these routes may give, besides its own. */
    common: { 401: hostAuth ? hostUnauthorized : unauthorized, 429: tooManyRequests, 500: internalError, 503: unavailable }
  }
}

export type GuardedRoute = ReturnType<typeof guardedRoute>
