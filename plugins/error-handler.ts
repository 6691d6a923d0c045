import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ErrorBody } from '../schemas/index.js'

const INTERNAL_ERROR_MESSAGE = 'Internal server error'

function statusOf (error: FastifyError): number {
  const status = error.statusCode
  return typeof status === 'number' && status >= 400 && status <= 599 ? status : 500
}

export function sendError (reply: FastifyReply, status: number, message: string) {
  const body: ErrorBody = { error: status, message }
  return reply.code(status).type('application/json; charset=utf-8').send(body)
}

/**
 * Every failure leaves in the Error shape. Client errors (4xx) carry their own message, written by
 * Fastify or by us; 503 carries the unavailability message; any other server error is logged with
 * the request id and answered with a generic message, so no stack, SQL or path reaches a client.
 */
export function handleError (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = statusOf(error)
  if (status < 500) {
    // At debug: a flood of bad or anonymous requests must not become a flood of log lines
    // (/metrics counts them by status).
    request.log.debug({ status, code: error.code }, 'request refused: %s', error.message)
    return sendError(reply, status, error.message)
  }
  // A 503 (store unavailable, overloaded) is a state the service reports, not a bug.
  request.log[status === 503 ? 'warn' : 'error']({ err: error }, 'request failed')
  return sendError(reply, status, status === 503 ? error.message : INTERNAL_ERROR_MESSAGE)
}

// Errors Node's HTTP parser raises before there is a request to answer.
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timed out'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Request body is too large']
}

/** Answers a request Node could not parse in the Error shape, then closes the connection. */
export function handleClientError (error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, message] = CLIENT_ERRORS[String(error.code)] ?? [400, 'Malformed HTTP request']
  const body = JSON.stringify({ error: status, message } satisfies ErrorBody)
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

/** Errors Fastify raises before routing: a malformed URL (400), or a path parameter too long. */
export function handleFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // Fastify answers an over-long parameter with 414; here it can only be a bad id, a 400.
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendError(reply, 400, 'A path parameter is too long')
  return handleError(error, request, reply)
}

export function handleNotFound (_request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, 404, 'Route not found')
}

export interface ErrorHandlerOptions {
  /** Also answer unknown routes; Fastify allows one not-found handler per prefix. */
  notFound: boolean
}

/** Sets the Error-shaped error handler (and not-found handler) on the scope that registers it. */
export default fp<ErrorHandlerOptions>(async function errorHandler (fastify, { notFound }) {
  fastify.setErrorHandler(handleError)
  if (notFound) fastify.setNotFoundHandler(handleNotFound)
}, { name: 'plant-store-error-handler' })
