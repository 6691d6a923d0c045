import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions } from 'fastify'
import docs from '../plugins/docs.js'
import errorHandler, { handleClientError, handleError } from '../plugins/error-handler.js'
import plantStore, { type PlantStoreOptions } from './plugin.js'

/**
 * Builds the service, ready to listen but not listening: tests and the server entry use this same
 * factory. `serverOptions` carries what only the entry knows (logger, timeouts).
 */
export async function buildApp (options: PlantStoreOptions, serverOptions: FastifyServerOptions = {}) {
  const app = Fastify({
    bodyLimit: options.bodyLimit,
    // Every failure in the Error shape, also those Fastify and Node answer before any route runs.
    clientErrorHandler: handleClientError,
    frameworkErrors: handleError,
    // While closing, a request on a busy keep-alive connection is still served (then the
    // connection closes) rather than answered with Fastify's own 503 body.
    return503OnClosing: false,
    // An id has at most 20 characters; a longer path parameter still gets a 400 from validation.
    routerOptions: { maxParamLength: 1000 },
    ...serverOptions
  }).withTypeProvider<TypeBoxTypeProvider>()
  // Error-shaped answers for unknown routes and for anything outside the plant-store plugin.
  await app.register(errorHandler, { notFound: true })
  // Before the routes: swagger collects them as they are added.
  await app.register(docs)
  await app.register(plantStore, options)
  await app.ready()
  return app
}
