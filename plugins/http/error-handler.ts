import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ErrorBody } from '../../schemas/index.js'
import { isKnownFault, UnsupportedMediaTypeError } from './errors.js'
import { FaultLog } from './fault-log.js'
import type { Schedule } from './log-repeats.js'

export const INTERNAL_ERROR_MESSAGE = 'Internal server error'
export const ROUTE_NOT_FOUND = 'Route not found'
export const MALFORMED_URL = 'The URL path is not valid: it holds a malformed percent-encoding'

const isErrorStatus = (status: unknown): status is number => typeof status === 'number' && status >= 400 && status <= 599

// The error's own status; else one a hook set on the reply before throwing (as Fastify does); else 500.
function statusOf (error: FastifyError, reply: FastifyReply): number {
  if (isErrorStatus(error.statusCode)) return error.statusCode
  return isErrorStatus(reply.statusCode) ? reply.statusCode : 500
}

export function sendError (reply: FastifyReply, status: number, message: string) {
  const body: ErrorBody = { error: status, message }
  return reply.code(status).type('application/json; charset=utf-8').send(body)
}

/**
 * The error handler: every failure leaves in the Error shape. Client errors (4xx) carry their own
 * message, written by Fastify or by us; 503 carries the unavailability message; any other server
 * error is logged with the request id and answered with a generic message, so no stack, SQL or
 * path reaches a client. A known fault is logged through `faults`: a line, or a count.
 */
export function errorResponder (faults: FaultLog) {
  return function handleError (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    // @fastify/static refuses a path that leaves its folder (403): for a client, there is no such route.
    if (error.code === 'FST_STATIC_FORBIDDEN_PATH') return handleNotFound(request, reply)
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') error = new UnsupportedMediaTypeError()
    const status = statusOf(error, reply)
    // 501: what this service cannot do (a host's store without update), said as it is.
    if (status < 500 || (status === 501 && String(error.code).startsWith('PLANT_STORE_'))) {
      // At debug: a flood of bad or anonymous requests must not become a flood of log lines
      // (/metrics counts them by status).
      request.log.debug({ status, code: error.code }, 'request refused: %s', error.message)
      return sendError(reply, status, error.message)
    }
    if (isKnownFault(error)) faults.failed(request.log, error.code, error)
    // Another 503 (a host's) is a state it reports too, not a bug.
    else request.log[status === 503 ? 'warn' : 'error']({ err: error }, 'request failed')
    return sendError(reply, status, status === 503 ? error.message : INTERNAL_ERROR_MESSAGE)
  }
}

// Errors Node's HTTP parser raises before there is a request to answer.
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timed out'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Request body is too large']
}

/** The Error body as JSON text, for answers written without Fastify. */
export const errorJson = (status: number, message: string) => JSON.stringify({ error: status, message } satisfies ErrorBody)

/** A whole HTTP/1.1 answer in the Error shape, written by hand, that closes its connection. */
export function rawErrorResponse (status: number, message: string): string {
  const body = errorJson(status, message)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/** Answers a request Node could not parse in the Error shape, then closes the connection. */
export function handleClientError (error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, message] = CLIENT_ERRORS[String(error.code)] ?? [400, 'Malformed HTTP request']
  socket.end(rawErrorResponse(status, message))
}

/** Errors Fastify raises before routing: a malformed URL (400), or a path parameter too long. */
export function handleFrameworkError (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  // Fastify answers an over-long parameter with 414; here it can only be a bad id, a 400.
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return sendError(reply, 400, 'A path parameter is too long')
  // Otherwise a malformed URL (FST_ERR_BAD_URL; no route has async constraints). Fastify's message
  // quotes the whole URL, which may be any length and hold a secret in its query string.
  return sendError(reply, 400, MALFORMED_URL)
}

export function handleNotFound (_request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, 404, ROUTE_NOT_FOUND)
}

/**
 * Whether the plugin raised an error: its own (PLANT_STORE_*), and Fastify's while running its
 * routes (FST_ERR_*: a body too large, a content type refused, validation). Anything else was
 * thrown by the host's own hooks or authentication (a maintenance 503, a global limiter's 429).
 */
export function raisedByPlugin (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('PLANT_STORE_') || code.startsWith('FST_ERR_'))
}

type ErrorHandler = ReturnType<typeof errorResponder>

/** Answers the plugin's own errors with `handleError`; hands the rest on to the host's error handler. */
function pluginErrorsOnly (handleError: ErrorHandler): ErrorHandler {
  return function handlePluginError (error, request, reply) {
    if (!raisedByPlugin(error)) {
      // The host's handler answers in the host's shape: not through the plant routes' response
      // schemas (the plugin's Error shape), which would fail to serialize it.
      reply.serializer(JSON.stringify)
      // Thrown from an error handler, an error goes on to the parent scope's handler.
      throw error
    }
    return handleError(error, request, reply)
  }
}

export interface ErrorHandlerOptions {
  /** Also answer unknown routes (the service's root scope). */
  notFound?: boolean
  /** Hand the errors the plugin did not raise on to the host's error handler. */
  hostErrors?: boolean
  /** When the repeats of a known fault are summed up (a test's clock); a timer by default. */
  schedule?: Schedule
}

/** Sets the Error-shaped error handler (and not-found handler) on the scope that registers it. */
export default fp<ErrorHandlerOptions>(async function errorHandler (fastify, { notFound = false, hostErrors = false, schedule }) {
  // A host that set no error handler (before registering the plugin) has Fastify's default, which
  // would answer through the plant routes' response schemas and fail: the plugin answers then.
  const hostHasOne = fastify.errorHandler.name !== 'defaultErrorHandler'
  const faults = new FaultLog(fastify.log, schedule)
  fastify.addHook('onClose', async () => faults.flush())
  const handleError = errorResponder(faults)
  fastify.setErrorHandler(hostErrors && hostHasOne ? pluginErrorsOnly(handleError) : handleError)
  if (notFound) fastify.setNotFoundHandler(handleNotFound)
}, { name: 'plant-store-error-handler' })
