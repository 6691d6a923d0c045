/** The service's document keeps the plain names; an embedded plugin's defaults are namespaced. */
export const SERVICE_OPENAPI_NAMES = { securityScheme: 'bearerAuth', plantsTag: 'plants', healthTag: 'health' }
