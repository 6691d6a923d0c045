import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyServerOptions } from 'fastify'
import plantStore, { openapiTags, securitySchemes, swaggerReferenceName } from 'plant-store'

/** A host app with its own routes, its OpenAPI document and Swagger UI, and the plant store at /garden. */
export async function buildHost (serverOptions: FastifyServerOptions = {}) {
  const app = Fastify(serverOptions)

  // Optional: the plant routes appear in the host's OpenAPI 3.1 document and in Swagger UI.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'My garden', version: '1.0.0' },
      tags: openapiTags, // the tags the plant routes use, with their descriptions
      components: { securitySchemes } // the bearerAuth scheme the plant routes name
    },
    // Named schemas keep readable component names (plant-store.Plant) instead of def-0, def-1…
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  await app.register(swaggerUi, { routePrefix: '/documentation' })

  app.get('/hello', async () => ({ hello: 'world' }))

  await app.register(plantStore, {
    prefix: '/garden',
    tokens: (process.env.API_TOKENS ?? '').split(','),
    // A URL: the plugin opens the store and closes it with the app. postgres://… needs `pg`,
    // sqlite:<path> needs `better-sqlite3` installed beside plant-store.
    store: process.env.DATABASE_URL ?? 'memory:'
  })
  return app
}
