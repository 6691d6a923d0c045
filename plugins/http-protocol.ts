import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { errorJson, rawErrorResponse, ROUTE_NOT_FOUND, sendError } from './error-handler.js'

const EXPECTATION_FAILED = 'Only the expectation 100-continue is supported'
const HOST_REQUIRED = 'An HTTP/1.1 request must have a Host header'

/**
 * The refusals HTTP/1.1 itself calls for, in the Error shape: Node would answer them with an empty
 * body (417, 400) or by closing the connection (CONNECT). The server must be created with
 * `requireHostHeader: false`, so that a request without Host reaches the hook below.
 */
export default fp(async function httpProtocol (fastify) {
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
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      sendError(reply, 400, HOST_REQUIRED)
      return
    }
    done()
  })
}, { name: 'plant-store-http-protocol' })
