import { PlantExistsError, StoreFailedError, StoreUnavailableError } from '../http/errors.js'
import { SchemaNewerError } from './schema-version.js'
import { OPTIONAL_STORE_METHODS, STORE_METHODS, type PlantStore } from './types.js'

// Errors are told apart by their code, not their class: a host's store may hold its own copy of
// the package, whose classes are not ours.
const EXISTS = new PlantExistsError().code
const UNAVAILABLE = new StoreUnavailableError().code
const UNAVAILABLE_MESSAGE = new StoreUnavailableError().message
const SCHEMA_NEWER = new SchemaNewerError().code

/**
 * Our unavailable error for the store's own: wrapping what that wraps when it says only
 * what ours says, so that the log line says "unavailable" once.
 */
function unavailable (cause: unknown): Error {
  const { message, cause: inner } = cause as { message?: unknown, cause?: unknown }
  if (message !== UNAVAILABLE_MESSAGE) return new StoreUnavailableError({ cause })
  return inner === undefined ? new StoreUnavailableError() : new StoreUnavailableError({ cause: inner })
}

/** What a store's failure means to the routes: one of four errors, with the service's own message. */
export function routeErrorFor (cause: unknown): Error {
  const code = (cause as { code?: unknown } | null)?.code
  if (code === EXISTS) return new PlantExistsError({ cause })
  if (code === SCHEMA_NEWER) return new SchemaNewerError()
  if (code === UNAVAILABLE) return unavailable(cause)
  return new StoreFailedError({ cause })
}

const fail = (cause: unknown): never => { throw routeErrorFor(cause) }

/**
 * The store as the routes see it, whoever wrote it: a failure reaches them as PlantExistsError
 * (409), StoreUnavailableError or SchemaNewerError (503) or StoreFailedError (500), each with the service's own
 * message. The store's own error is kept as the cause, for the log: its message, stack or status
 * (a driver's detail, an SQL fragment, a host's 404) never reaches a client.
 */
export function guardStore (store: PlantStore): PlantStore {
  const guarded = {} as Record<string, unknown>
  for (const name of [...STORE_METHODS, ...OPTIONAL_STORE_METHODS]) {
    // An optional method the store lacks stays absent: the routes answer 501 for what it would do.
    if (typeof store[name] !== 'function') continue
    const method = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store)
    guarded[name] = (...args: unknown[]) => {
      try {
        return method(...args).then(undefined, fail)
      } catch (error) {
        // A method that throws instead of rejecting fails the same way.
        return Promise.reject(routeErrorFor(error))
      }
    }
  }
  return guarded as unknown as PlantStore
}
