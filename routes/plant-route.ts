import type { onRequestHookHandler } from 'fastify'
import type { PlantStore } from '../plugins/store/index.js'
import { INT64_MESSAGE, validationMessage } from '../plugins/http/validation.js'
import type { plantSchemas } from '../schemas/index.js'
import type { GuardedRoute, GuardedRoutesOptions } from './guarded.js'

export interface PlantRoutesOptions extends GuardedRoutesOptions {
  /** The largest request body accepted, in bytes. */
  bodyLimit: number
  /** The longest name or tag accepted, in characters. */
  maxTextLength: number
}

/** What each plant route is added with: the store, the schemas with this instance's text limit, the shared parts. */
export interface PlantRoute {
  store: PlantStore
  schemas: ReturnType<typeof plantSchemas>
  route: GuardedRoute
  options: PlantRoutesOptions
}

export const badId = (part: string) => ({ 'An id that is not an int64': validationMessage(part, '/id', INT64_MESSAGE) })

/** `/plants/` matches `/plants/:id` with an empty id: it names no plant, and no route either. */
export const emptyIdIsNotFound: onRequestHookHandler = (request, reply, done) => {
  if ((request.params as { id: string }).id === '') reply.callNotFound()
  else done()
}
