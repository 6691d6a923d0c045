import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { errorJson, handleNotFound, rawErrorResponse, ROUTE_NOT_FOUND, sendError } from '../../src/service-api.js'
import { DEFAULT_MAX_HEADERS_COUNT } from '../config/index.js'

export interface HttpProtocolOptions {
  /** The most header fields (and, apart, trailer fields) a request may have: more is 431. */
  maxHeadersCount?: number
}

const EXPECTATION_FAILED = 'Only the expectation 100-continue is supported'
const HOST_REQUIRED = 'An HTTP/1.1 request must have a Host header'
export const HOST_REPEATED = 'A request must have one Host header, not several'
export const TOO_MANY_FIELDS = 'Request has more header fields than the service reads'
export const UNKNOWN_TRANSFER_CODING = 'Transfer-Encoding other than chunked is not implemented'

/**
 * The refusals HTTP/1.1 itself calls for, in the Error shape: Node would answer them with an empty
 * body (417, 400) or by closing the connection (CONNECT), or not at all: Node keeps the first
 * maxHeadersCount fields and silently drops the rest (a second Authorization, a Content-Encoding),
 * and reads `Transfer-Encoding: gzip, chunked` as plain chunked. The server must be created with
 * `requireHostHeader: false`, so that a request without Host reaches the hook below.
 */
export default fp<HttpProtocolOptions>(async function httpProtocol (fastify, { maxHeadersCount = DEFAULT_MAX_HEADERS_COUNT }) {
  // Node keeps at least one field more than this: one more than the service reads is seen, and refused.
  fastify.server.maxHeadersCount = maxHeadersCount + 1
  const maxRawEntries = 2 * maxHeadersCount
  // Node keeps the first of several Host fields: which one a proxy in front read is anyone's guess.
  const hostFields = (rawHeaders: string[]) => {
    let count = 0
    for (let index = 0; index < rawHeaders.length; index += 2) {
      const name = rawHeaders[index]
      if (name.length === 4 && name.toLowerCase() === 'host') count++
    }
    return count
  }
  // An Expect other than 100-continue (which Node answers itself): the request is not handled.
  fastify.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const body = errorJson(417, EXPECTATION_FAILED)
    response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' })
    response.end(body)
  })
  // A tunnel request: a method no route of the service has.
  fastify.server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {})
    socket.end(rawErrorResponse(404, ROUTE_NOT_FOUND))
  })
  fastify.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    if (raw.rawHeaders.length > maxRawEntries) return sendError(reply, 431, TOO_MANY_FIELDS)
    if (raw.httpVersion === '1.1' && request.headers.host === undefined) return sendError(reply, 400, HOST_REQUIRED)
    // RFC 9112 §3.2: 400; and the connection is not trusted with another request.
    if (hostFields(raw.rawHeaders) > 1) return sendError(reply.header('connection', 'close'), 400, HOST_REPEATED)
    // RFC 9112 §6.1: a transfer coding the server does not understand is answered 501.
    const codings = request.headers['transfer-encoding']
    if (codings !== undefined && codings.toLowerCase() !== 'chunked') return sendError(reply, 501, UNKNOWN_TRANSFER_CODING)
    // Fastify would read (and parse) an unknown route's body before its not-found handler runs.
    if (request.is404) return handleNotFound(request, reply)
    done()
  })
  // Trailers come after the body: as many fields as headers, no more, or some would be dropped unseen.
  fastify.addHook('preValidation', (request, reply, done) => {
    // inject()'s requests have no trailers at all.
    const trailers: string[] | undefined = request.raw.rawTrailers
    if (trailers !== undefined && trailers.length > maxRawEntries) return sendError(reply, 431, TOO_MANY_FIELDS)
    done()
  })
}, { name: 'plant-store-http-protocol' })
