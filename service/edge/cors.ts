import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

export interface CorsOptions {
  /** The origins whose pages may call the API from a browser. */
  origins: readonly string[]
}

// Nothing of CORS: no Access-Control-* header, and an OPTIONS goes on to its route (405, or 404).
const REFUSED: FastifyCorsOptions = { origin: false }

/**
 * Browsers on the listed origins may call the API (@fastify/cors): their preflights are answered
 * before any route, so a browser learns what it may send without a token. Any other request gets
 * no Access-Control-* header at all: an origin not listed, no Origin, and an OPTIONS that is no
 * preflight (without Access-Control-Request-Method), which @fastify/cors would otherwise answer
 * 400 in plain text.
 */
export default fp<CorsOptions>(async function corsOrigins (fastify, { origins }) {
  const granted = new Map(origins.map((origin): [string, FastifyCorsOptions] => [origin, {
    origin,
    // PUT /plants/{id} writes a plant; If-Match / If-None-Match its ETag; Last-Event-ID resumes the change feed.
    methods: ['GET', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'if-match', 'if-none-match', 'last-event-id'],
    // ETag: a plant's revision; Link: the next page of a list.
    exposedHeaders: ['etag', 'link', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
    maxAge: 600
  }]))
  const optionsFor = (request: FastifyRequest) => {
    const { origin, 'access-control-request-method': preflight } = request.headers
    if (origin === undefined || (request.method === 'OPTIONS' && preflight === undefined)) return REFUSED
    return granted.get(origin) ?? REFUSED
  }
  await fastify.register(cors, { delegator: (request, callback) => callback(null, optionsFor(request)) })
}, { name: 'plant-store-cors' })
