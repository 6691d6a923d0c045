import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { handleClientError, isLivenessProbe, sendError } from '../../src/service-api.js'
import { addRouteHook } from './route-hooks.js'

export interface ConnectionsOptions {
  /** The most client connections open at once; 0 for no limit. */
  maxConnections?: number
  /** The most of them that have not completed a request with a verifying token; 0 for no limit of their own. */
  maxTokenless?: number
  /** The slowest average a request body may arrive at once `bodyRateGrace` has passed, in bytes/s; 0 for no minimum. */
  minBodyRate?: number
  /** How long a request body may take before `minBodyRate` applies, in ms. */
  bodyRateGrace?: number
}

/** What the server owes on one client connection. */
interface Connection {
  socket: Socket
  /** Requests taken in and not answered yet. */
  inFlight: number
  /** The bytes read when the connection last owed nothing: more bytes mean a request has begun. */
  quietAt: number
  /** The answer to the last request taken in. */
  last?: ServerResponse
  /** Closes after its current answer (a request answered before its body came): owes nothing more. */
  ending: boolean
  /** Accepted so recently that the server has not yet read what its client sent: it may not make room. */
  fresh: boolean
  /** When it was accepted (Date.now()). */
  openedAt: number
  /** Accepted while strangers held their whole share: it may stay only as a known client's. */
  overShare: boolean
  /** When the body of the request being read began, and the bytes read then. */
  bodySince: number
  bodyFrom: number
}

const SHUTTING_DOWN = 'The service is shutting down, try again later'
const OVER_SHARE = 'Too many connections without a token, send one or try again later'
// What a client refused for being over the share is told to wait, in seconds.
const OVER_SHARE_RETRY_AFTER = '1'
// How long a closing connection waits for the client to close its side, in ms.
const LINGER = 2000
// How many of the oldest strangers are looked at for one that stalls, once one that owes nothing is found.
const STALLING_SCAN = 64
// A new connection that has sent nothing yet is spared this long: its client's request may be on
// its way (a busy client, a loaded machine); a flood's silent sockets go after it.
const SILENT_GRACE = 200
// How many times within `bodyRateGrace` the bodies being read are checked: it acts within 10 %.
const BODY_CHECKS_PER_GRACE = 10

/** Whether a request announces a body: one framed by a non-zero Content-Length or chunked. */
const announcesBody = (headers: IncomingHttpHeaders) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')

/** The 408 answer Node gives to a request it timed out, given here to one whose body is too slow. */
const timedOut = (socket: Socket, message: string) =>
  handleClientError(Object.assign(new Error(message), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)

/**
 * The server's connections: how many may be open, what their silence means, and how they end at
 * shutdown. It tracks what each connection owes (requests taken in and not answered), so that:
 * - at the connection limit, a connection that owes nothing makes room for a new client, as nginx
 *   reuses its idle connections: silent or idle connections cannot lock clients out. The first to go
 *   are those that never completed an authenticated request (oldest first), and only then those that
 *   did (least recently used first): making room never cuts off a working client for a stranger.
 *   A stranger's claim depends on its progress: one whose request headers have begun but not all
 *   come (slowloris), or whose client does not read the answers written (a pipeline never read), is
 *   owed nothing and goes with the idle strangers: a client without a token keeps a slot only while
 *   its requests are being handled;
 * - strangers may hold at most `maxTokenless` connections, however well they behave, so that the
 *   rest stays for clients with a token: beyond that, a new connection makes room by closing a
 *   stranger's that stalls or owes nothing; when none may go (all busy), the new one is over the
 *   share: a request on it without a verifying token is answered 503 at once (nothing handled,
 *   nginx's limit_conn does the same) and its connection closed;
 * - a request answered before its body came (refused: no token, unknown route, refused type) is
 *   answered with Connection: close and its connection let go, rather than held while the body trickles in;
 * - a body that arrives slower than `minBodyRate` on average, once `bodyRateGrace` has passed, is
 *   answered 408 and its connection closed;
 * - a connection silent for CONNECTION_TIMEOUT is answered 408 if a request had begun on it, and
 *   simply closed if it owed nothing; one whose requests are being handled is left to answer them;
 * - at shutdown, every request taken in is answered, none is handled any more (one read after
 *   that is answered 503 and stores nothing), and each connection closes once it owes nothing.
 */
export default fp<ConnectionsOptions>(async function connections (fastify, options) {
  const { maxConnections = 0, maxTokenless = 0, minBodyRate = 0, bodyRateGrace = 0 } = options
  const server = fastify.server
  const open = new Map<Socket, Connection>()
  // The order in which connections that owe nothing make room: strangers, then the known ones.
  const strangers = new Set<Connection>()
  const known = new Set<Connection>()
  // Connections reading a request body that must keep up with minBodyRate.
  const receiving = new Set<Connection>()
  let closing = false

  const owesNothing = (connection: Connection) =>
    connection.ending || (connection.inFlight === 0 && connection.socket.bytesRead === connection.quietAt)

  /**
   * Whether a stranger's connection makes no progress worth its slot: its request's headers have
   * begun and are not all read (a request is taken in within the read of its last header line), or
   * its client does not read: answers wait in the socket, or queue behind one (browsers never
   * pipeline; a pipeline that fits the kernel's buffers is answered whole and owes nothing).
   */
  const stalls = ({ inFlight, quietAt, socket }: Connection) =>
    (inFlight === 0 && socket.bytesRead !== quietAt) || inFlight > 1 || socket.writableLength > 0

  /**
   * The stranger with the weakest claim on its slot, if one may go: one that stalls, then one that
   * owes nothing (a new client that has not yet sent its request is among those: it goes after
   * every stalling one). Each oldest first, and none so fresh that what its client sent may be unread.
   * One still spared for its silence (SILENT_GRACE) goes only when `orSpared` and no other may.
   */
  function weakestStranger (orSpared: boolean): Connection | undefined {
    const now = Date.now()
    let idle: Connection | undefined
    // The oldest of those spared: having sent nothing, it neither stalls nor owes anything.
    let spared: Connection | undefined
    let seen = 0
    for (const connection of strangers) {
      if (connection.fresh) continue
      if (connection.socket.bytesRead === 0 && now - connection.openedAt < SILENT_GRACE) {
        spared ??= connection
        continue
      }
      if (stalls(connection)) return connection
      if (idle === undefined && owesNothing(connection)) idle = connection
      // A flood's connections are the oldest: past these, a flood of idle ones costs no full scan.
      if (++seen >= STALLING_SCAN && idle !== undefined) break
    }
    return idle ?? (orSpared ? spared : undefined)
  }

  /** The connection with the weakest claim on its slot: a stranger's, then a known client's that owes nothing, least recently used first. */
  function weakest (): Connection | undefined {
    // A stranger, even one still spared for its silence, goes before a known client's connection.
    const stranger = weakestStranger(true)
    if (stranger !== undefined) return stranger
    for (const connection of known) if (!connection.fresh && owesNothing(connection)) return connection
  }

  /** Closes a connection, which at once stops counting among those that may make room. */
  function evict (connection: Connection | undefined) {
    if (connection === undefined) return
    strangers.delete(connection)
    known.delete(connection)
    connection.socket.destroy()
  }

  const makeRoom = () => evict(weakest())

  if (maxConnections > 0) {
    // Node itself refuses connections beyond the limit. One refused at a moment when no open
    // connection could go (all just accepted) still makes room for the next.
    server.maxConnections = maxConnections
    server.on('drop', makeRoom)
  }
  server.on('connection', (socket: Socket) => {
    const connection: Connection = { socket, inFlight: 0, quietAt: 0, ending: false, fresh: true, openedAt: Date.now(), overShare: false, bodySince: 0, bodyFrom: 0 }
    open.set(socket, connection)
    strangers.add(connection)
    socket.once('close', () => {
      open.delete(socket)
      strangers.delete(connection)
      known.delete(connection)
      receiving.delete(connection)
    })
    // Connections are accepted in bursts, and read only at the next turn of the event loop: a new
    // client that already sent its request must not make room for the one accepted after it.
    setImmediate(() => setImmediate(() => { connection.fresh = false }))
    if (maxTokenless > 0 && strangers.size > maxTokenless) {
      const weak = weakestStranger(false)
      if (weak !== undefined) return evict(weak)
      connection.overShare = true
    }
    if (maxConnections > 0 && open.size >= maxConnections) makeRoom()
  })

  // Route-level hooks run after the scope's: on a route that requires a token, this one runs only
  // once the token was accepted. Its connection is a known client's, used just now.
  const knownClient: onRequestHookHandler = (request, _reply, done) => {
    const connection = open.get(request.raw.socket)
    if (connection !== undefined) {
      strangers.delete(connection)
      known.delete(connection)
      known.add(connection)
    }
    done()
  }
  fastify.addHook('onRoute', (route) => {
    const security = (route.schema as { security?: unknown[] } | undefined)?.security
    if (security !== undefined && security.length > 0) addRouteHook(route, 'onRequest', knownClient)
  })

  // After every onRequest hook: a request with a verifying token has made its connection known.
  fastify.addHook('preHandler', (request, reply, done) => {
    const connection = open.get(request.raw.socket)
    if (connection === undefined || !connection.overShare || !strangers.has(connection)) return done()
    if (isLivenessProbe(request.routeOptions.config)) return done()
    connection.ending = true
    reply.header('connection', 'close').header('retry-after', OVER_SHARE_RETRY_AFTER)
    sendError(reply, 503, OVER_SHARE)
  })

  if (minBodyRate > 0) {
    const check = setInterval(() => {
      const now = Date.now()
      for (const connection of receiving) {
        const { last, socket } = connection
        if (last!.req.complete || last!.headersSent) {
          receiving.delete(connection)
          continue
        }
        const allowed = bodyRateGrace + (socket.bytesRead - connection.bodyFrom) * 1000 / minBodyRate
        if (now - connection.bodySince < allowed) continue
        receiving.delete(connection)
        timedOut(socket, 'Request body too slow')
      }
    }, Math.max(1, Math.floor(bodyRateGrace / BODY_CHECKS_PER_GRACE)))
    check.unref()
    fastify.addHook('onClose', (_instance, done) => {
      clearInterval(check)
      done()
    })
  }

  // With a listener here, Node no longer destroys a connection that timed out: this decides.
  server.on('timeout', (socket: Socket) => {
    const connection = open.get(socket)
    /* c8 ignore next: a socket leaves the map when it closes, and a closed socket has no timer */
    if (connection === undefined) return socket.destroy()
    if (owesNothing(connection)) return socket.destroy()
    const { inFlight, last } = connection
    const receiving = inFlight === 0 || (inFlight === 1 && !last!.req.complete && !last!.headersSent)
    // The same 408 as Node's own request timeout; nothing was handled, since the request is incomplete.
    if (receiving) return timedOut(socket, 'Connection timed out')
    // A client that does not read its answer; otherwise the service is still working on the answers it owes.
    if (socket.writableLength > 0) socket.destroy()
  })

  /**
   * Half-closes a connection that owes nothing, then reads on until the client closes its side:
   * closing with unread bytes (a client's pipelined requests) would reset the connection and could
   * lose the answers just written. A client that never closes is cut off after LINGER.
   */
  function closeGently (socket: Socket) {
    socket.end()
    setTimeout(() => socket.destroy(), LINGER).unref()
  }

  fastify.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket
    const connection = open.get(socket)
    // inject() requests come through no connection of the server.
    if (connection === undefined) return done()
    // Read after its connection began to close: not taken in, and no answer can follow.
    if (socket.writableEnded) return reply.hijack()
    connection.inFlight++
    connection.last = reply.raw
    if (minBodyRate > 0 && announcesBody(request.headers)) {
      connection.bodySince = Date.now()
      connection.bodyFrom = socket.bytesRead
      receiving.add(connection)
    }
    // 'close' follows the end of the answer, or the loss of the connection.
    reply.raw.once('close', () => {
      if (--connection.inFlight > 0) return
      connection.quietAt = socket.bytesRead
      if (closing) closeGently(socket)
    })
    if (!closing) return done()
    // Read while shutting down: answered, not handled. Fastify marks such an answer
    // Connection: close, which would end the connection before the answers queued behind it.
    reply.raw.removeHeader('connection')
    sendError(reply, 503, SHUTTING_DOWN)
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
        const connection = open.get(raw.socket)
        if (connection !== undefined) connection.ending = true
      }
      done()
    })
  })

  fastify.addHook('preClose', (done) => {
    closing = true
    for (const [socket, connection] of open) if (connection.inFlight === 0) closeGently(socket)
    done()
  })
}, { name: 'plant-store-connections' })
