import jwt from '@fastify/jwt'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyServerOptions } from 'fastify'
import plantStore, { openapiDeclarations, openapiWebhooks, swaggerReferenceName } from 'plant-store'

// The names the plant routes use in the host's document: its own JWT scheme, tags of their own.
const openapi = { securityScheme: 'bearerAuth', plantsTag: 'garden', healthTag: 'garden-health' }

/** A host app with its own JWT auth, its OpenAPI document and Swagger UI, and the plant store at /garden. */
export async function buildHost (serverOptions: FastifyServerOptions = {}) {
  const app = Fastify(serverOptions)
  await app.register(jwt, { secret: process.env.JWT_SECRET ?? 'a-development-secret-of-32-bytes!' })

  // Optional: the plant routes appear in the host's OpenAPI 3.1 document and in Swagger UI.
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'My garden', version: '1.0.0' },
      tags: openapiDeclarations(openapi).tags, // the plant routes' tags, with their descriptions
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      webhooks: openapiWebhooks() // the plant events the plugin sends to the endpoints of its `webhooks` option
    },
    // Named schemas keep readable component names (plant-store.Plant) instead of def-0, def-1…
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  await app.register(swaggerUi, { routePrefix: '/documentation' })

  app.get('/hello', async () => ({ hello: 'world' }))

  await app.register(plantStore, {
    prefix: '/garden',
    // The host's JWT guards the plant routes; its subject is who the rate limit counts.
    authenticate: async (request) => {
      try {
        return (await request.jwtVerify<{ sub: string }>()).sub
      } catch {
        return false
      }
    },
    openapi,
    rateLimit: { max: 100, timeWindow: 60_000 },
    // A URL: the plugin opens the store and closes it with the app. postgres://… needs `pg`,
    // sqlite:<path> needs `better-sqlite3` installed beside plant-store.
    store: process.env.DATABASE_URL ?? 'memory:'
  })
  return app
}
