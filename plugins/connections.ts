import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { handleClientError, sendError } from './error-handler.js'

export interface ConnectionsOptions {
  /** The most client connections open at once; 0 for no limit. */
  maxConnections?: number
}

/** What the server owes on one client connection. */
interface Connection {
  /** Requests taken in and not answered yet. */
  inFlight: number
  /** The bytes read when the connection last owed nothing: more bytes mean a request has begun. */
  quietAt: number
  /** The answer to the last request taken in. */
  last?: ServerResponse
}

const SHUTTING_DOWN = 'The service is shutting down, try again later'
// How long a closing connection waits for the client to close its side, in ms.
const LINGER = 2000

/**
 * The server's connections: how many may be open, what their silence means, and how they end at
 * shutdown. It tracks what each connection owes (requests taken in and not answered), so that:
 * - at the connection limit, the oldest connection that owes nothing makes room for a new client,
 *   as nginx reuses its idle connections: silent or idle connections cannot lock clients out;
 * - a connection silent for CONNECTION_TIMEOUT is answered 408 if a request had begun on it, and
 *   simply closed if it owed nothing; one whose requests are being handled is left to answer them;
 * - at shutdown, every request taken in is answered, none is handled any more (one read after
 *   that is answered 503 and stores nothing), and each connection closes once it owes nothing.
 */
export default fp<ConnectionsOptions>(async function connections (fastify, { maxConnections = 0 }) {
  const server = fastify.server
  const open = new Map<Socket, Connection>()
  let closing = false

  const owesNothing = (socket: Socket, connection: Connection) =>
    connection.inFlight === 0 && socket.bytesRead === connection.quietAt

  /** Closes the oldest connection that owes nothing, other than `newcomer`. */
  function makeRoom (newcomer: Socket) {
    for (const [socket, connection] of open) {
      if (socket !== newcomer && owesNothing(socket, connection)) {
        open.delete(socket)
        socket.destroy()
        return
      }
    }
  }

  // Node itself refuses connections beyond the limit when every open one owes an answer.
  if (maxConnections > 0) server.maxConnections = maxConnections
  server.on('connection', (socket: Socket) => {
    open.set(socket, { inFlight: 0, quietAt: 0 })
    socket.once('close', () => open.delete(socket))
    if (maxConnections > 0 && open.size >= maxConnections) makeRoom(socket)
  })

  // With a listener here, Node no longer destroys a connection that timed out: this decides.
  server.on('timeout', (socket: Socket) => {
    const connection = open.get(socket)
    /* c8 ignore next: a socket leaves the map when it closes, and a closed socket has no timer */
    if (connection === undefined) return socket.destroy()
    if (owesNothing(socket, connection)) return socket.destroy()
    const { inFlight, last } = connection
    const receiving = inFlight === 0 || (inFlight === 1 && !last!.req.complete && !last!.headersSent)
    // The same 408 as Node's own request timeout; nothing was handled, since the request is incomplete.
    if (receiving) return handleClientError(Object.assign(new Error('Connection timed out'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
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

  fastify.addHook('preClose', (done) => {
    closing = true
    for (const [socket, connection] of open) if (connection.inFlight === 0) closeGently(socket)
    done()
  })
}, { name: 'plant-store-connections' })
