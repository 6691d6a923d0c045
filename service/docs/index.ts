import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { openapiWebhooks } from '../../src/service-api.js'
import { openapiDeclarations } from '../../src/service-api.js'
import { SERVICE_OPENAPI_NAMES } from './names.js'

export const DOCS_PREFIX = '/documentation'

const { securitySchemes, tags } = openapiDeclarations(SERVICE_OPENAPI_NAMES,
  'A token from API_TOKENS or API_TOKENS_FILE: every plant route (create, read, list, delete) requires one')

// Relative, so Try it out calls the service that serves the page, wherever it runs.
const servers = [{ url: '/', description: 'This service, wherever it runs (local or production)', 'x-internal': false }]

/**
 * The component name of a shared schema: its `$id` without the prefixes that keep it apart in a
 * host app (plant-store., and max<n>. for another text limit). The service has one set of them.
 */
const componentName = (id: string) => id.slice(id.lastIndexOf('.') + 1)

export interface DocsOptions {
  /** The longest name or tag, as the plant routes take it: the webhook events carry the same. */
  maxTextLength?: number | undefined
}

/**
 * The OpenAPI 3.1 document, generated from the schemas the routes validate with, and Swagger UI
 * served with all its assets from this service. Registered outside the auth scope: both are public.
 */
export default fp<DocsOptions>(async function docs (fastify, { maxTextLength }) {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plant Store',
        description: 'A plant store: create, read, list and delete plants with exact 64-bit ids. Every plant ' +
          'route needs a bearer token (Authorize); the health probes are public. Ids travel as exact JSON ' +
          'integers: Swagger UI displays an id past 2^53 rounded, while the service sends and stores it exactly. ' +
          'Browsers call it from its own origin (this page), and from the origins its operator lists in CORS_ORIGINS.',
        version: '1.0.0',
        contact: { name: 'plant-store contributors' },
        license: { name: 'MIT', identifier: 'MIT' }
      },
      servers,
      tags,
      components: { securitySchemes },
      webhooks: openapiWebhooks(maxTextLength)
    },
    // Shared schemas get readable component names (NewPlant, Plant, Error) instead of def-0, def-1...
    refResolver: {
      buildLocalReference: (json) => componentName(json.$id as string)
    }
  })
  await fastify.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { persistAuthorization: true, tryItOutEnabled: true }
  })
}, { name: 'plant-store-docs' })
