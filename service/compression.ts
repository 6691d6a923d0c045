import compress from '@fastify/compress'
import type { FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { DOCS_PREFIX } from './docs.js'
import { addRouteHook } from './route-hooks.js'

/**
 * Answers smaller than this go as they are: compressing them saves a few bytes and costs CPU. A
 * created plant (~50 bytes) is far below it; a full list page (1 MiB) far above.
 */
export const COMPRESS_THRESHOLD = 16 * 1024

// Swagger UI's own files, served by @fastify/static under /documentation/static/.
const STATIC_DIR = join(dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui/package.json')), 'static')
const STATIC_ROUTE = `${DOCS_PREFIX}/static/*`
const STATIC_TYPES: Record<string, string> = { '.js': 'application/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' }

/** Whether Accept-Encoding allows gzip (a `q=0` refuses it). */
const acceptsGzip = (request: FastifyRequest) =>
  /(?:^|,)\s*(?:gzip|\*)\s*(?:;\s*q=(?!0(?:\.0*)?\s*(?:,|$))[\d.]+\s*)?(?:,|$)/i.test(request.headers['accept-encoding'] ?? '')

/**
 * Swagger UI's large files, gzipped once on first request and kept: its 1.7 MB bundle is never
 * compressed twice. Smaller or other files are left to @fastify/static.
 */
function cachedStaticGzip (): onRequestHookHandler {
  const cache = new Map<string, Buffer | null>()
  const gzipped = (file: string) => {
    if (!cache.has(file)) {
      let body: Buffer | null = null
      const type = STATIC_TYPES[extname(file)]
      // Only names listed in the folder: a path climbing out of it is no key here.
      if (type !== undefined && /^[\w.-]+$/.test(file)) {
        try {
          const content = readFileSync(join(STATIC_DIR, file))
          if (content.length >= COMPRESS_THRESHOLD) body = gzipSync(content)
        } catch {}
      }
      cache.set(file, body)
    }
    return cache.get(file)!
  }
  return (request, reply, done) => {
    const file = (request.params as { '*': string })['*']
    const body = acceptsGzip(request) ? gzipped(file) : null
    if (body === null) return done()
    reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding')
      .type(STATIC_TYPES[extname(file)]).send(body)
  }
}

/** Whether an answer of this route may be large: the list of plants, and the documentation's own. */
const mayBeLarge = (route: RouteOptions) =>
  ([route.method].flat().includes('GET') && route.url.endsWith('/plants')) || (route.url.startsWith(DOCS_PREFIX) && route.url !== STATIC_ROUTE)

/**
 * Compresses large answers when the client asks (Accept-Encoding), with @fastify/compress above
 * COMPRESS_THRESHOLD. Every other route is left out of it altogether: a create pays nothing.
 * Request bodies are never decompressed: a Content-Encoding stays a 415.
 */
export default fp(async function compression (fastify) {
  // Added before @fastify/compress's own onRoute hook, so that it sees the choice made here.
  fastify.addHook('onRoute', (route) => {
    route.decompress = false
    if (route.url === STATIC_ROUTE) addRouteHook(route, 'onRequest', cachedStaticGzip())
    if (!mayBeLarge(route)) route.compress = false
  })
  await fastify.register(compress, { threshold: COMPRESS_THRESHOLD, globalDecompression: false })
}, { name: 'plant-store-compression' })
