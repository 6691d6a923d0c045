import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { identityOf } from '../plugins/auth/index.js'
import { feedOf } from '../plugins/feed/index.js'
import { FEED_BUSY_RETRY_SECONDS, FeedBusyError, FeedCursorGoneError, FeedCursorInvalidError } from '../plugins/feed/errors.js'
import { integerMessage, validationMessage } from '../plugins/http/validation.js'
import { ChangesQuerySchema, changesSchemas, MAX_CHANGES, MAX_WAIT_SECONDS, type ChangesQuery, type ChangesRequest } from '../schemas/changes.js'
import { STREAM_READ } from '../plugins/feed/stream.js'
import { ErrorSchema, ref } from '../schemas/index.js'
import { guardedRoute, type GuardedRoutesOptions } from './guarded.js'
import { badRequest, messageOf, rateLimitHeaders } from './openapi/answers.js'

const EVENT_STREAM = 'text/event-stream'

export interface ChangesRoutesOptions extends GuardedRoutesOptions {
  maxTextLength: number
}

const errorAnswer = (status: number, description: string, message: string, headers?: Record<string, object>) => ({
  description,
  ...(headers && { headers }),
  content: { 'application/json': { schema: ref(ErrorSchema), examples: { [`${status}-1`]: { summary: description, value: { error: status, message } } } } }
})

/** A signal aborted once the response closes (the client went, or the answer was sent), also if it has already. */
function closed (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  const { raw } = reply
  // The request's socket: inject()'s response has none.
  if (raw.destroyed || request.raw.socket?.destroyed === true) controller.abort()
  else raw.once('close', () => controller.abort())
  return controller.signal
}

/**
 * GET /plants/changes: the change feed, a page at a time or as a long-poll. Without the feed (off,
 * or a store that keeps none) the path is no route: 404, not a plant id that is not an int64.
 */
const changesRoutes: FastifyPluginAsyncTypebox<ChangesRoutesOptions> = async (fastify, options) => {
  const feed = feedOf(fastify)
  if (feed === undefined) {
    fastify.get('/plants/changes', { schema: { hide: true } as object }, (_request, reply) => reply.callNotFound())
    return
  }
  const route = guardedRoute(fastify, options)
  /** The changes as Server-Sent Events: from Last-Event-ID (or `after`), until the stream's lifetime ends. */
  const stream = async (query: ChangesQuery, lastEventId: string | string[] | undefined, who: string, reply: FastifyReply, gone: AbortSignal) => {
    const start = await feed.start({ ...query, after: typeof lastEventId === 'string' ? lastEventId : query.after, limit: STREAM_READ })
    if (gone.aborted) {
      // The client went during the first read: no stream, no place taken.
      reply.hijack()
      reply.raw.destroy()
      return reply
    }
    const release = feed.hold(who)
    reply.hijack()
    // The headers the hooks set (CORS, the rate limit's, security headers): writeHead after hijack() sends only the
    // response's own, which it merges with those given here.
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value)
    // Connection: close: once the stream ends (its lifetime, the app's close) the socket goes too, not kept alive idle.
    reply.raw.writeHead(200, { 'content-type': `${EVENT_STREAM}; charset=utf-8`, 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'close' })
    // The head goes out now, not with the first event: a client of an idle feed knows it is following.
    reply.raw.flushHeaders()
    feed.streams.run(reply.raw, start, release, gone).catch(() => {})
    return reply
  }
  const { ChangesPage } = changesSchemas(options.maxTextLength)
  fastify.get('/plants/changes', {
    config: route.config,
    schema: {
      ...route.docs('Follow the changes', 'Every committed create, update and delete, once each, in the feed\'s order (a plant\'s own in the order ' +
        'they happened), with the same event its webhook body carries. Pass `next` as `after` to go on; with `wait`, an answer with no ' +
        'change waits for one (past the caps on waiters, 503 with Retry-After). To mirror the store: take the head (`after=now`), list /plants, then follow from the head\'s `next`.', 'listChanges'),
      querystring: ChangesQuerySchema,
      response: {
        200: {
          description: 'The changes after the cursor, and where to go on from; with `Accept: text/event-stream`, the same changes as ' +
            'Server-Sent Events (`id:` the cursor, `event:` the type, `data:` the event), heartbeat comments while idle, until the ' +
            'stream\'s lifetime ends (resume with Last-Event-ID)',
          headers: rateLimitHeaders,
          content: {
            'application/json': { schema: ChangesPage },
            [EVENT_STREAM]: { schema: { type: 'string', maxLength: 2 ** 31 - 1, pattern: '^(id|event|data|:).*', description: 'text/event-stream: an event per change' } }
          }
        },
        400: badRequest({
          'A cursor this feed did not give': messageOf(FeedCursorInvalidError),
          'A limit out of range': validationMessage('querystring', '/limit', integerMessage(1, MAX_CHANGES)),
          'A wait out of range': validationMessage('querystring', '/wait', integerMessage(0, MAX_WAIT_SECONDS))
        }),
        // A 503 also when too many wait at once (in this process, or for this token), with Retry-After.
        ...route.common,
        410: errorAnswer(410, 'The cursor is past what the feed keeps, or of another feed: list again', messageOf(FeedCursorGoneError), rateLimitHeaders)
      }
    }
  }, async (request, reply) => {
    // Aborted once the response closes: a client that goes ends its wait or its stream, and frees its place.
    const gone = closed(request, reply)
    try {
      if (request.headers.accept?.includes(EVENT_STREAM) === true) {
        return await stream(request.query, request.headers['last-event-id'], identityOf(request), reply, gone)
      }
      // Validated: its defaults are filled in.
      const page = await feed.page(request.query as ChangesRequest, identityOf(request), gone)
      // The text as made: each event's bytes as stored, exact int64 ids (a string is sent as it is).
      return await reply.type('application/json; charset=utf-8').send(page as never)
    } catch (error) {
      if (error instanceof FeedBusyError) reply.header('Retry-After', String(FEED_BUSY_RETRY_SECONDS))
      throw error
    }
  })
}

export default changesRoutes
