import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyServerOptions } from 'fastify'
import docs from '../plugins/docs.js'
import errorHandler from '../plugins/error-handler.js'
import plantStore, { type PlantStoreOptions } from './plugin.js'

/**
 * Builds the service, ready to listen but not listening: tests and the server entry use this same
 * factory. `serverOptions` carries what only the entry knows (logger, timeouts).
 */
export async function buildApp (options: PlantStoreOptions, serverOptions: FastifyServerOptions = {}) {
  const app = Fastify({ bodyLimit: options.bodyLimit, ...serverOptions }).withTypeProvider<TypeBoxTypeProvider>()
  // Error-shaped answers for unknown routes and for anything outside the plant-store plugin.
  await app.register(errorHandler, { notFound: true })
  // Before the routes: swagger collects them as they are added.
  await app.register(docs)
  await app.register(plantStore, options)
  await app.ready()
  return app
}
