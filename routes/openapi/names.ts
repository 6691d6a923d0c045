/** The OpenAPI names the plugin's routes use; each can be set by the host (the plugin's `openapi` option). */
export interface OpenapiNames {
  /** The security scheme the plant routes name. */
  securityScheme?: string | undefined
  /** The tag of the plant routes. */
  plantsTag?: string | undefined
  /** The tag of the health routes. */
  healthTag?: string | undefined
}

// Namespaced, so that they never clash with a host's own (its JWT's `bearerAuth`, its `health` tag).
export const DEFAULT_OPENAPI_NAMES = {
  securityScheme: 'plantStoreToken',
  plantsTag: 'plant-store.plants',
  healthTag: 'plant-store.health'
} as const satisfies OpenapiNames

/** The names given, the defaults for the rest. */
export const openapiNames = (names: OpenapiNames = {}): Required<{ [K in keyof OpenapiNames]: string }> => ({
  securityScheme: names.securityScheme ?? DEFAULT_OPENAPI_NAMES.securityScheme,
  plantsTag: names.plantsTag ?? DEFAULT_OPENAPI_NAMES.plantsTag,
  healthTag: names.healthTag ?? DEFAULT_OPENAPI_NAMES.healthTag
})

const TOKEN_DESCRIPTION = 'A bearer token the plant-store plugin accepts (one of its `tokens`): every plant route ' +
  '(create, read, list, delete) requires one'

/**
 * What a host declares in its OpenAPI document for the plant routes: their security scheme (when the
 * plugin's own tokens guard them) and their tags, under the names given to the plugin.
 */
export function openapiDeclarations (names: OpenapiNames = {}, tokenDescription = TOKEN_DESCRIPTION) {
  const { securityScheme, plantsTag, healthTag } = openapiNames(names)
  return {
    securitySchemes: { [securityScheme]: { type: 'http', scheme: 'bearer', description: tokenDescription } } as
      Record<string, { type: 'http', scheme: 'bearer', description: string }>,
    tags: [
      { name: plantsTag, description: 'Create, read, list and delete plants (authentication required)' },
      { name: healthTag, description: 'Probes for a load balancer or an orchestrator: public, never rate limited' }
    ]
  }
}

/** The declarations under the default names. */
export const { securitySchemes, tags: openapiTags } = openapiDeclarations()
