import createError from '@fastify/error'
import { PLANT_NOT_FOUND_MESSAGE } from '../../schemas/protocol.js'

// A refusal (4xx) is an expected answer, not a bug: no stack trace is captured for it, which
// would cost more than the rest of the refusal; nor for a known fault (503, see isKnownFault).
// Other server-side errors (500) keep theirs, for the log.
const refusal = (code: string, message: string, status: number) => createError(code, message, status, Error, false)

/**
 * How deep a request body may nest arrays and objects. A plant is one level; deeper bodies only
 * cost parsing work (1 MiB of `[` took ~350 ms of event loop), so they are refused before it.
 */
export const MAX_JSON_DEPTH = 64

// The service's own failures, each with its status; their messages are written for clients.
export const ValidationError = refusal('FST_ERR_VALIDATION', '%s', 400)
export const InvalidJsonError = refusal('PLANT_STORE_INVALID_JSON', 'Body is not valid JSON', 400)
export const InvalidUtf8Error = refusal('PLANT_STORE_INVALID_UTF8', 'Body is not valid UTF-8', 400)
export const ForbiddenKeyError = refusal(
  'PLANT_STORE_FORBIDDEN_KEY', 'Body contains a forbidden __proto__ or constructor.prototype key', 400)
export const EmptyBodyError = refusal('PLANT_STORE_EMPTY_BODY', 'Body must not be empty', 400)
export const TooDeepError = refusal(
  'PLANT_STORE_TOO_DEEP', `Body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`, 400)
export const RepeatedKeyError = refusal('PLANT_STORE_REPEATED_KEY', 'Body repeats a key within one object', 400)
export const UnsupportedCharsetError = refusal(
  'PLANT_STORE_UNSUPPORTED_CHARSET', 'Body must be UTF-8: no other charset is supported', 415)
export const EncodedBodyError = refusal(
  'PLANT_STORE_ENCODED_BODY', 'Content-Encoding is not supported: send the body as it is', 415)
export const UnauthorizedError = refusal('PLANT_STORE_UNAUTHORIZED', 'A valid bearer token is required', 401)
// The host's `authenticate` said no: its credentials may be anything (a JWT, a session cookie).
export const UnauthenticatedError = refusal('PLANT_STORE_UNAUTHENTICATED', 'Authentication is required', 401)
export const AuthThrottledError = refusal(
  'PLANT_STORE_AUTH_THROTTLED', 'Too many failed authentication attempts from this address, try again later', 429)
// Fastify's own message for it differs between its versions (5.0.0 adds the type sent).
export const UnsupportedMediaTypeError = refusal(
  'PLANT_STORE_UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json', 415)
export const PlantNotFoundError = refusal('PLANT_STORE_PLANT_NOT_FOUND', PLANT_NOT_FOUND_MESSAGE, 404)
export const PlantExistsError = refusal('PLANT_STORE_PLANT_EXISTS', 'A plant with this id already exists', 409)
export const PreconditionFailedError = refusal('PLANT_STORE_PRECONDITION_FAILED',
  'The plant is not at the ETag in If-Match (it was changed meanwhile): read it again, and retry with its new ETag', 412)
export const IdMismatchError = refusal('PLANT_STORE_ID_MISMATCH', 'The id in the body must equal the id in the path', 400)
// What a host's store lacks: a statement about this service, sent as it is (not a fault to log).
export const UpdateUnsupportedError = refusal('PLANT_STORE_UPDATE_UNSUPPORTED', 'This plant store cannot update plants (its store has no update method)', 501)
export const TagListUnsupportedError = refusal('PLANT_STORE_TAG_LIST_UNSUPPORTED',
  'This plant store cannot list plants by tag (its store has no listTagged method)', 501)
export const RateLimitedError = refusal('PLANT_STORE_RATE_LIMITED', 'Too many requests for this token, try again later', 429)
export const ServiceOverloadedError = createError(
  'PLANT_STORE_OVERLOADED', 'The service is overloaded, try again later', 503, Error, false)
export const StoreUnavailableError = createError(
  'PLANT_STORE_UNAVAILABLE', 'The plant store is unavailable, try again later', 503, Error, false)
// A store failure that is neither: a bug, answered 500 with the generic message, logged with its cause.
export const StoreFailedError = createError('PLANT_STORE_FAILED', 'The plant store failed', 500)
export const WebhookEventNotFoundError = refusal('PLANT_STORE_WEBHOOK_EVENT_NOT_FOUND', 'No such webhook event (or no delivery of it to that endpoint)', 404)
export const WebhookEndpointNotFoundError = refusal('PLANT_STORE_WEBHOOK_ENDPOINT_NOT_FOUND', 'No webhook endpoint of that name', 404)

/**
 * A known fault: a state the plugin reports with its own 503 (the store unavailable, the service
 * overloaded), not a bug. The class is decided where the failure happened (a store found its
 * database unreachable, busy, read-only, moved...), not from a list of drivers' codes here.
 */
export function isKnownFault (error: unknown): boolean {
  const { statusCode, code } = Object(error) as { statusCode?: unknown, code?: unknown }
  return statusCode === 503 && typeof code === 'string' && code.startsWith('PLANT_STORE_')
}

/** What the log says of a failure: its message and its causes', in one line, without stacks. */
export function reasonOf (error: unknown): string {
  const parts: string[] = []
  const seen = new Set<unknown>()
  for (let at = error; at instanceof Error && !seen.has(at); at = at.cause) {
    seen.add(at)
    // An AggregateError of connect attempts (one per address of a host name) has no message of its own.
    parts.push(at.message || String((at as { code?: unknown }).code ?? at.name))
  }
  return parts.join(': ')
}

/** A failure's log fields: a known fault's reason, in a line; anything else (a bug) as the error, with its stack. */
export const failureFields = (error: unknown) => isKnownFault(error) ? { reason: reasonOf(error) } : { err: error }
