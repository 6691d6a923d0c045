/** The OpenAPI security schemes the plant routes name; a host app that documents them declares these. */
export const securitySchemes = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description: 'A token from API_TOKENS or API_TOKENS_FILE: every plant route (create, read, list, delete) requires one'
  }
} as const

/** The OpenAPI tags the routes use, declared with what they hold. */
export const openapiTags = [
  { name: 'plants', description: 'Create, read, list and delete plants (bearer token required)' },
  { name: 'health', description: 'Probes for a load balancer or an orchestrator: public, never rate limited' }
]

export const PLANTS_TAG = openapiTags[0].name
export const HEALTH_TAG = openapiTags[1].name
