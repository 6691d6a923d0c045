import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import { DOCS_PREFIX } from '../docs/index.js'
import { addRouteHook } from './route-hooks.js'

/**
 * What a JSON API answer needs (OWASP's REST Security Cheat Sheet): never cached, never sniffed
 * into something else, never framed, nothing loaded if a browser renders it. helmet's other
 * headers mean something for HTML pages (or over HTTPS, which a proxy in front terminates), and
 * writing them cost ~680 bytes and their validation on every reply.
 */
export const API_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY'
}

/**
 * The headers helmet sets with its defaults, computed once: @fastify/helmet builds helmet's
 * middleware anew for every request (re-parsing the Content-Security-Policy each time). Without
 * its CSP's upgrade-insecure-requests: served over plain HTTP on any name but localhost, the page
 * would fetch every asset over https, which nothing answers, and stay blank.
 */
export function helmetHeaders (): Record<string, string> {
  const headers: Record<string, string> = {}
  const response = {
    setHeader: (name: string, value: string) => { headers[name.toLowerCase()] = value },
    removeHeader: (name: string) => { delete headers[name.toLowerCase()] }
  }
  helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } })({} as IncomingMessage, response as unknown as ServerResponse, () => {})
  return headers
}

/** The API set on every answer; the documentation pages (HTML) get helmet's full set over it. */
export default fp(async function securityHeaders (fastify) {
  const pageHeaders = helmetHeaders()
  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(API_HEADERS)
    done()
  })
  // Route-level hooks run after the one above, so helmet's values win on these routes.
  fastify.addHook('onRoute', (route) => {
    if (!route.url.startsWith(DOCS_PREFIX)) return
    addRouteHook(route, 'onRequest', (_request, reply, done) => {
      reply.headers(pageHeaders)
      done()
    })
  })
}, { name: 'plant-store-security-headers' })
