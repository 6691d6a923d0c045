import type { ErrorBody } from '../schemas/error.js'
import { PLANT_NOT_FOUND_MESSAGE } from '../schemas/protocol.js'

/** The API's operations, as the client names them in its errors. */
export type Operation = 'POST /plants' | 'GET /plants' | 'GET /plants/{id}' | 'PUT /plants/{id}' | 'DELETE /plants/{id}' | 'GET /plants/changes'

/**
 * The service, or something between it and the client (a proxy's 502), refused a request.
 * `body` is the service's Error body; for an answer without one (an HTML page, an empty body) it
 * is made from the status line, so every refusal reads the same way.
 */
export class PlantStoreError extends Error {
  override name = 'PlantStoreError'

  constructor (
    readonly status: number,
    readonly body: ErrorBody,
    /** How long the answer asked the client to wait (Retry-After), in ms, when it said. */
    readonly retryAfter?: number
  ) {
    super(body.message)
  }
}

/** 400: the id, body or query is invalid; `message` says which and why. */
export class InvalidRequestError extends PlantStoreError { override name = 'InvalidRequestError' }
/** 401: no valid bearer token. */
export class UnauthorizedError extends PlantStoreError { override name = 'UnauthorizedError' }
/** 404 from GET or DELETE /plants/{id} with the service's own words for it: no plant has this id. */
export class PlantNotFoundError extends PlantStoreError { override name = 'PlantNotFoundError' }
/**
 * Any other 404: the request reached no route of the service, most likely through a baseUrl
 * without the prefix the service is mounted under. Its message says so; its body is the answer's.
 */
export class RouteNotFoundError extends PlantStoreError {
  override name = 'RouteNotFoundError'

  constructor (body: ErrorBody, request: string) {
    super(404, body)
    this.message = `${body.message}: ${request} reaches no plant-store route; check baseUrl, with the prefix the service is mounted under`
  }
}
/** 409: a plant with this id exists already; it is unchanged. */
export class PlantExistsError extends PlantStoreError { override name = 'PlantExistsError' }
/** 412: the plant is not at the ETag given as `ifMatch` (it was changed meanwhile); nothing changed. */
export class PreconditionFailedError extends PlantStoreError { override name = 'PreconditionFailedError' }
/** 410: the change feed's cursor is older than the changes it keeps, or of another database: list again, then follow from the head. */
export class CursorGoneError extends PlantStoreError { override name = 'CursorGoneError' }
/** 429: too many requests for this token, after the retries allowed. */
export class RateLimitedError extends PlantStoreError { override name = 'RateLimitedError' }
/** 503: the store is unavailable or the service overloaded, after the retries allowed. */
export class ServiceUnavailableError extends PlantStoreError { override name = 'ServiceUnavailableError' }

const ERROR_CLASSES: Record<number, typeof PlantStoreError> = {
  400: InvalidRequestError,
  401: UnauthorizedError,
  404: PlantNotFoundError,
  409: PlantExistsError,
  410: CursorGoneError,
  412: PreconditionFailedError,
  429: RateLimitedError,
  503: ServiceUnavailableError
}

/** A success status whose body is not what the API promises (not JSON, or not the right shape). */
export class UnexpectedResponseError extends Error {
  override name = 'UnexpectedResponseError'

  constructor (readonly status: number, message: string) {
    super(message)
  }
}

/** No complete answer came within the client's `timeout`: neither its headers nor all of its body. */
export class ResponseTimeoutError extends Error {
  override name = 'ResponseTimeoutError'
}

const isErrorBody = (value: unknown): value is { error: bigint, message: string } =>
  typeof value === 'object' && value !== null &&
  typeof (value as { error?: unknown }).error === 'bigint' &&
  typeof (value as { message?: unknown }).message === 'string'

// The one 404 that means "no such plant": the service's own, to a request for one plant. Any other
// (a wrong baseUrl, a proxy's page) must not read as "not found, so create it" or "already deleted".
const saysNoSuchPlant = (operation: Operation, body: unknown) =>
  (operation === 'GET /plants/{id}' || operation === 'PUT /plants/{id}' || operation === 'DELETE /plants/{id}') &&
  isErrorBody(body) && body.error === 404n && body.message === PLANT_NOT_FOUND_MESSAGE

export interface Refused {
  operation: Operation
  /** The URL the request was sent to. */
  url: string
  status: number
  statusText: string
  /** The answer's body, parsed (text that is not JSON as it is, no body as undefined). */
  body: unknown
  /** What Retry-After asked for, in ms. */
  retryAfter?: number
}

/** The typed error for a refusal: its class from the status, its body parsed or made from the status line. */
export function refusal ({ operation, url, status, statusText, body, retryAfter }: Refused): PlantStoreError {
  const errorBody: ErrorBody = isErrorBody(body)
    ? { error: Number(body.error), message: body.message }
    : { error: status, message: `${status} ${statusText || 'Error'}` }
  if (status === 404 && !saysNoSuchPlant(operation, body)) {
    return new RouteNotFoundError(errorBody, `${operation.split(' ')[0]} ${url}`)
  }
  const ErrorClass = ERROR_CLASSES[status] ?? PlantStoreError
  return new ErrorClass(status, errorBody, retryAfter)
}
