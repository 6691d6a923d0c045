import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { securitySchemes } from '../schemas/index.js'

const DOCS_PREFIX = '/documentation'

/**
 * The OpenAPI 3.1 document, generated from the schemas the routes validate with, and Swagger UI
 * served with all its assets from this service. Registered outside the auth scope: both are public.
 */
export default fp(async function docs (fastify) {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        description: 'A plant store: create plants with a bearer token.',
        version: '1.0.0',
        license: { name: 'MIT', identifier: 'MIT' }
      },
      // Relative, so Try it out calls the service that serves the page, wherever it runs.
      servers: [{ url: '/', description: 'This service' }],
      components: { securitySchemes }
    },
    // Shared schemas keep their own names (NewPlant, Plant, Error) instead of def-0, def-1...
    refResolver: {
      buildLocalReference: (json) => json.$id as string
    }
  })
  await fastify.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { persistAuthorization: true, tryItOutEnabled: true }
  })
}, { name: 'plant-store-docs' })
