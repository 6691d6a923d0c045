import compress from '@fastify/compress'
import type { FastifyRequest, onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { DOCS_PREFIX } from '../docs/index.js'
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

// What @fastify/static (under @fastify/swagger-ui) answers Swagger UI's files with: any cache may
// keep them, and revalidates them before each use.
const STATIC_CACHE_CONTROL = 'public, max-age=0'

/** Whether If-None-Match names `etag` (compared weakly, as RFC 9110 asks for it), or is `*`. */
function matches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const opaque = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => {
    const candidate = tag.trim()
    return candidate === '*' || candidate.replace(/^W\//, '') === opaque
  })
}

interface StaticFile { type: string, gzip?: Buffer, etag?: string }

/**
 * Swagger UI's large files, gzipped once on first request and kept: its 1.7 MB bundle is never
 * compressed twice. Only the files it ships are kept, listed at start: a name a client makes up
 * is no key here (smaller or other files, and every other name, are left to @fastify/static).
 * The gzipped variant is cacheable as the plain one is, with an ETag of its own.
 */
function cachedStaticGzip (): onRequestHookHandler {
  const shipped = new Map<string, StaticFile>()
  for (const name of readdirSync(STATIC_DIR)) {
    const type = STATIC_TYPES[extname(name)]
    if (type !== undefined && statSync(join(STATIC_DIR, name)).size >= COMPRESS_THRESHOLD) shipped.set(name, { type })
  }
  return (request, reply, done) => {
    const name = (request.params as { '*': string })['*']
    const file = shipped.get(name)
    if (file === undefined) return done()
    // Both variants: a cache keeps them apart.
    reply.header('vary', 'accept-encoding')
    if (!acceptsGzip(request)) return done()
    if (file.gzip === undefined) {
      file.gzip = gzipSync(readFileSync(join(STATIC_DIR, name)))
      file.etag = `"${createHash('sha256').update(file.gzip).digest('base64url')}"`
    }
    reply.header('etag', file.etag).header('cache-control', STATIC_CACHE_CONTROL)
    if (matches(request.headers['if-none-match'], file.etag!)) return reply.code(304).send()
    reply.header('content-encoding', 'gzip').type(file.type).send(file.gzip)
  }
}

/**
 * The documentation's documents (the OpenAPI JSON and YAML), the same text on every request:
 * gzipped once per route, and again only if the text changes. One text per route is kept.
 */
function cachedDocumentGzip (): onSendHookHandler {
  let source: string | undefined
  let gzipped = Buffer.alloc(0)
  return (request, reply, payload, done) => {
    if (typeof payload !== 'string' || payload.length < COMPRESS_THRESHOLD || !acceptsGzip(request)) return done(null, payload)
    if (payload !== source) {
      gzipped = gzipSync(payload)
      source = payload
    }
    reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding')
    done(null, gzipped)
  }
}

/** Whether an answer of this route may be large and differ between requests: the list of plants. */
const mayBeLarge = (route: RouteOptions) => [route.method].flat().includes('GET') && route.url.endsWith('/plants')

/**
 * Compresses large answers when the client asks (Accept-Encoding), with @fastify/compress above
 * COMPRESS_THRESHOLD. Every other route is left out of it altogether: a create pays nothing.
 * Request bodies are never decompressed: a Content-Encoding stays a 415.
 */
export default fp(async function compression (fastify) {
  // Added before @fastify/compress's own onRoute hook, so that it sees the choice made here.
  // One per path, shared by its GET and HEAD routes.
  const staticGzip = cachedStaticGzip()
  const documentGzip = new Map<string, onSendHookHandler>()
  fastify.addHook('onRoute', (route) => {
    route.decompress = false
    if (route.url === STATIC_ROUTE) addRouteHook(route, 'onRequest', staticGzip)
    else if (route.url.startsWith(DOCS_PREFIX)) {
      if (!documentGzip.has(route.url)) documentGzip.set(route.url, cachedDocumentGzip())
      addRouteHook(route, 'onSend', documentGzip.get(route.url)!)
    }
    if (!mayBeLarge(route)) route.compress = false
  })
  await fastify.register(compress, { threshold: COMPRESS_THRESHOLD, globalDecompression: false })
}, { name: 'plant-store-compression' })
