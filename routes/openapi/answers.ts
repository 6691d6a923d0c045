import { errorCodes } from 'fastify'
import type { TSchema } from 'typebox'
import { CHALLENGE } from '../../plugins/auth/index.js'
import { INTERNAL_ERROR_MESSAGE } from '../../plugins/http/error-handler.js'
import {
  AuthThrottledError, PlantExistsError, PlantNotFoundError, PreconditionFailedError, RateLimitedError, ServiceOverloadedError, StoreUnavailableError,
  UnauthenticatedError, UnauthorizedError, UnsupportedMediaTypeError
} from '../../plugins/http/errors.js'
import { ErrorSchema, ref } from '../../schemas/index.js'
import { PLANT_NOT_FOUND_MESSAGE } from '../../schemas/protocol.js'

// What the OpenAPI document says of each answer, beside the schema its body is checked with. The
// example messages are taken from the errors themselves, so the document cannot drift from them.

const count = (description: string) =>
  ({ type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description })

/** The headers the rate limit adds to every answer to a request it counts (with RATE_LIMIT_MAX set). */
export const rateLimitHeaders = {
  'X-RateLimit-Limit': count('Requests this token may make per window (sent when a rate limit is configured)'),
  'X-RateLimit-Remaining': count('Requests this token has left in the window (sent when a rate limit is configured)'),
  'X-RateLimit-Reset': count('Seconds until the window starts again (sent when a rate limit is configured)')
}
const retryAfter = (description: string) => ({ 'Retry-After': count(`Seconds to wait before trying again: ${description}`) })

const challenge = {
  'WWW-Authenticate': {
    type: 'string',
    enum: [CHALLENGE, `${CHALLENGE}, error="invalid_token"`],
    description: 'The bearer challenge; error="invalid_token" when a token was sent but is not accepted'
  }
}

type Headers = Record<string, object>

/** A 2xx answer with a JSON body. */
export const success = <T extends TSchema>(schema: T, description: string, headers?: Headers) =>
  ({ description, ...(headers && { headers }), content: { 'application/json': { schema: ref(schema) } } })

/** An answer in the Error shape, with one example (or more) of the messages the service really sends. */
function failure (status: number, description: string, messages: Record<string, string>, headers?: Headers) {
  const examples = Object.fromEntries(Object.entries(messages).map(([summary, message], index) =>
    [`${status}-${index + 1}`, { summary, value: { error: status, message } }]))
  return { description, ...(headers && { headers }), content: { 'application/json': { schema: ref(ErrorSchema), examples } } }
}

/** The message an error of this type carries: what a client reads. */
export const messageOf = (ErrorType: new () => Error) => new ErrorType().message

/** A 400, with the validation messages of the route as examples (plugins/http/validation.ts words them). */
export const badRequest = (messages: Record<string, string>) =>
  failure(400, 'The request is invalid: what is wrong, in `message`', messages, rateLimitHeaders)

export const unauthorized = failure(401, 'No valid bearer token (the answer carries a WWW-Authenticate challenge)', {
  'No token, or not an accepted one': messageOf(UnauthorizedError)
}, challenge)
export const hostUnauthorized = failure(401, 'The host\'s authentication did not identify the request', {
  'Not authenticated': messageOf(UnauthenticatedError)
})
export const notFound = failure(404, PLANT_NOT_FOUND_MESSAGE, {
  [PLANT_NOT_FOUND_MESSAGE]: messageOf(PlantNotFoundError)
}, rateLimitHeaders)
export const conflict = failure(409, 'A plant with this id exists already; it is unchanged', {
  'The id is taken': messageOf(PlantExistsError)
}, rateLimitHeaders)
/** The ETag of an answer that carries one plant (on a store that keeps revisions: a host's may not). */
export const etagHeader = {
  ETag: {
    type: 'string',
    pattern: '^"[0-9]+"$',
    maxLength: 22,
    description: 'The plant\'s strong entity tag, new with each write to it: send it in If-Match to write only over this ' +
      'revision, in If-None-Match to be answered 304 while it is current (absent when the store keeps no revisions)',
    example: '"1"'
  }
}
/** A plant answer's headers: the rate limit's and its ETag. */
export const plantHeaders = { ...rateLimitHeaders, ...etagHeader }
export const notModified = { description: 'Not Modified: the plant is at an ETag of If-None-Match; no body', headers: etagHeader }
export const preconditionFailed = failure(412, 'The plant is not at an ETag of If-Match: it is unchanged', {
  'Changed meanwhile': messageOf(PreconditionFailedError)
}, rateLimitHeaders)
/** A 501: what a host's store cannot do. */
export const notImplemented = (ErrorType: new () => Error) => failure(501, 'The store this service uses cannot do this (a host\'s own store)', {
  'Not supported by the store': messageOf(ErrorType)
})
export const tooLarge = (bodyLimit: number) => failure(413, `The body is larger than the limit (${bodyLimit} bytes)`, {
  'The body is too large': messageOf(errorCodes.FST_ERR_CTP_BODY_TOO_LARGE)
}, rateLimitHeaders)
export const unsupportedMediaType = failure(415, 'The body is not application/json', {
  'Not JSON': messageOf(UnsupportedMediaTypeError)
}, rateLimitHeaders)
export const tooManyRequests = failure(429, 'Too many requests for this token in the window (when a rate limit is ' +
  'configured), or too many failed authentications from this address', {
  'Over the limit': messageOf(RateLimitedError),
  'Too many failed authentications': messageOf(AuthThrottledError)
}, { ...rateLimitHeaders, ...retryAfter('when the window starts again') })
export const internalError = failure(500, 'An unexpected failure: logged with the request id, its cause never sent', {
  'A fault of the service': INTERNAL_ERROR_MESSAGE
})
export const unavailable = failure(503, 'The store is unavailable or the service overloaded: try again later', {
  'The store does not answer': messageOf(StoreUnavailableError),
  'The service is overloaded': messageOf(ServiceOverloadedError)
}, retryAfter('sent when the service is overloaded'))
export const notReady = failure(503, 'The store does not answer: take this instance out of service', {
  'The store does not answer': messageOf(StoreUnavailableError)
})

/**
 * The operationId of a route under the plugin's prefix: `createPlant` at the root,
 * `gardenCreatePlant` under /garden, so that two instances in one host app never share one.
 */
export function operationId (prefix: string, name: string): string {
  const words = [...prefix.split(/[^A-Za-z0-9]+/).filter(Boolean), name]
  return words.map((word, index) => index === 0 ? word : word[0].toUpperCase() + word.slice(1)).join('')
}
