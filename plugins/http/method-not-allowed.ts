import type { FastifyInstance, FastifySchema, HTTPMethods, onRequestHookHandler } from 'fastify'
import { sendError } from './error-handler.js'

export const METHOD_NOT_ALLOWED = 'This path does not support the method: the Allow header lists those it does'

export interface MethodsOptions {
  /**
   * Also answer OPTIONS. Only where every preflight is answered by a hook before routing (the
   * service's CORS): a host may answer OPTIONS with routes of its own, which a 405 would shadow.
   */
  options?: boolean
  /** Leave a method to any route the host has that matches the path, a wildcard included. */
  yieldToHost?: boolean
}

/** Answers 405 before the body is read: `allow` lists the methods the path has. */
function refuseWith (allow: string): onRequestHookHandler {
  return (request, reply) => {
    // An empty parameter (`/plants/`) names nothing: no route, as for the methods the path has.
    if (Object.values(request.params as Record<string, string>).includes('')) return reply.callNotFound()
    reply.header('allow', allow)
    return sendError(reply, 405, METHOD_NOT_ALLOWED)
  }
}

/* c8 ignore next 2: the route's onRequest hook always answers first */
function unreachable () {}

// Kept out of the OpenAPI document (@fastify/swagger's `hide`, which FastifySchema lacks without it).
const hidden = { hide: true } as FastifySchema

/**
 * Notes the methods of each route added from now on below `fastify`; the plugin it returns, registered
 * once they are all added, answers every other method on their paths 405 with `Allow` (RFC 9110
 * §15.5.6), where Fastify would answer 404. HEAD stays as Fastify adds it beside GET.
 */
export function trackMethods (fastify: FastifyInstance, { options = false, yieldToHost = false }: MethodsOptions = {}) {
  const paths = new Map<string, Set<string>>()
  fastify.addHook('onRoute', (route) => {
    if (route.handler === unreachable) return
    // OPTIONS is a CORS preflight's (its catch-all route), never a method a path is said to have.
    const methods = [route.method].flat().filter((method) => method !== 'OPTIONS')
    if (methods.length === 0) return
    let allowed = paths.get(route.url)
    if (allowed === undefined) paths.set(route.url, allowed = new Set())
    for (const method of methods) allowed.add(method)
  })
  const prefix = fastify.prefix
  return async function methodNotAllowed (scope: FastifyInstance) {
    const taken = (method: string, url: string) => yieldToHost
      ? scope.findRoute({ method: method as HTTPMethods, url }) !== null
      : scope.hasRoute({ method: method as HTTPMethods, url })
    for (const [url, allowed] of paths) {
      const refused = scope.supportedMethods.filter((method) =>
        !allowed.has(method) && (options || method !== 'OPTIONS') && !taken(method, url))
      if (refused.length === 0) continue
      scope.route({
        method: refused as HTTPMethods[],
        url: url.slice(prefix.length),
        schema: hidden,
        onRequest: refuseWith([...allowed].sort().join(', ')),
        handler: unreachable
      })
    }
  }
}
