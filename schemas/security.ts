/** The OpenAPI security schemes the plant routes name; a host app that documents them declares these. */
export const securitySchemes = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token from API_TOKENS or API_TOKENS_FILE' }
} as const
