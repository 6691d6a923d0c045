import type { IncomingHttpHeaders, Server } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { handleClientError, hasVerifiedToken, isLivenessProbe, sendError, systemClock, type Clock } from '../../src/service-api.js'
import { ConnectionTable } from './connection-table.js'

export interface ConnectionsOptions {
  /** The most client connections open at once; 0 for no limit. */
  maxConnections?: number
  /** The most of them that have not completed a request with a verifying token; 0 for no limit of their own. */
  maxTokenless?: number
  /** The slowest average a request body may arrive at once `bodyRateGrace` has passed, in bytes/s; 0 for no minimum. */
  minBodyRate?: number
  /** How long a request body may take before `minBodyRate` applies, in ms. */
  bodyRateGrace?: number
  /** The clock of the connection policy's timers and times (a test's fake one); the system's by default. */
  clock?: Clock
}

const SHUTTING_DOWN = 'The service is shutting down, try again later'
const OVER_SHARE = 'Too many connections without a token, send one or try again later'
// What a client refused for being over the share is told to wait, in seconds.
const OVER_SHARE_RETRY_AFTER = '1'

/** Whether a request announces a body: one framed by a non-zero Content-Length or chunked. */
const announcesBody = (headers: IncomingHttpHeaders) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')

/** The 408 answer Node gives to a request it timed out, given here to one whose body is too slow. */
const timeOut = (socket: Socket, message: string) =>
  handleClientError(Object.assign(new Error(message), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)

/** Tells the table of each connection the server accepts, refuses, loses or finds silent. */
function watchConnections (server: Server, table: ConnectionTable<Socket>, maxConnections: number) {
  if (maxConnections > 0) {
    // Node itself refuses connections beyond the limit. One refused at a moment when no open
    // connection could go (all just accepted) still makes room for the next.
    server.maxConnections = maxConnections
    server.on('drop', () => table.makeRoom())
  }
  server.on('connection', (socket: Socket) => {
    table.admit(socket)
    socket.once('close', () => table.forget(socket))
  })
  // With a listener here, Node no longer destroys a connection that timed out: the table decides.
  server.on('timeout', (socket: Socket) => table.wentSilent(socket))
}

/** The connection policy of service/edge/connection-table.ts, on the server's connections and requests. */
export default fp<ConnectionsOptions>(async function connections (fastify, options) {
  const { maxConnections = 0, maxTokenless = 0, minBodyRate = 0, bodyRateGrace = 0, clock = systemClock } = options
  const table = new ConnectionTable<Socket>({ maxConnections, maxTokenless, minBodyRate, bodyRateGrace, clock, timeOut })
  watchConnections(fastify.server, table, maxConnections)

  fastify.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket
    const intake = table.takeIn(socket, reply.raw, announcesBody(request.headers))
    // inject() requests come through no connection of the server.
    if (intake === undefined) return done()
    // Read after its connection began to close: not taken in, and no answer can follow.
    if (intake === 'unread') return reply.hijack()
    // 'close' follows the end of the answer, or the loss of the connection.
    reply.raw.once('close', () => table.settle(socket))
    if (intake === 'taken') return done()
    // Read while shutting down: answered, not handled. Fastify marks such an answer
    // Connection: close, which would end the connection before the answers queued behind it.
    reply.raw.removeHeader('connection')
    sendError(reply, 503, SHUTTING_DOWN)
  })

  // After every onRequest hook, auth's among them, and before the body is read: a request whose
  // token verified makes its connection a known client's, even if its body is then refused.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    if (hasVerifiedToken(request)) table.markKnown(request.raw.socket)
    done(null, payload)
  })

  fastify.addHook('preHandler', (request, reply, done) => {
    if (!table.isOverShare(request.raw.socket) || isLivenessProbe(request.routeOptions.config)) return done()
    table.endAfterAnswer(request.raw.socket)
    reply.header('connection', 'close').header('retry-after', OVER_SHARE_RETRY_AFTER)
    sendError(reply, 503, OVER_SHARE)
  })

  // An answer sent before the request's body has come: the request was refused (it cannot succeed
  // whatever its body), and the connection is let go at once rather than held while the body
  // trickles in; the rest of the body is not read.
  fastify.addHook('onSend', (request, reply, _payload, done) => {
    const raw = request.raw
    if (raw.complete || !announcesBody(raw.headers)) return done()
    // The answer may be written within the read of the request's first bytes: first let the parser
    // read what has come already, so that a body sent whole with its headers keeps the connection.
    setImmediate(() => {
      if (!raw.complete) {
        reply.header('connection', 'close')
        table.endAfterAnswer(raw.socket)
      }
      done()
    })
  })

  fastify.addHook('preClose', (done) => {
    table.drain()
    done()
  })
  fastify.addHook('onClose', (_instance, done) => {
    table.stop()
    done()
  })
}, { name: 'plant-store-connections' })
