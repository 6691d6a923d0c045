import { ErrorSchema } from './error.js'
import { HealthStatusSchema } from './health.js'
import { plantSchemas } from './plant.js'
import { DEFAULT_MAX_TEXT_LENGTH } from './primitives.js'

export * from './error.js'
export * from './health.js'
export * from './plant.js'
export * from './primitives.js'
export * from './webhook-events.js'

/**
 * The named schemas, added once to a plugin's scope (OpenAPI components, serializers) and to its
 * validators, with names and tags of at most `maxTextLength` characters.
 */
export function sharedSchemas (maxTextLength = DEFAULT_MAX_TEXT_LENGTH) {
  const { Plant, NewPlant, PlantUpdate, PlantList } = plantSchemas(maxTextLength)
  return [ErrorSchema, HealthStatusSchema, Plant, NewPlant, PlantUpdate, PlantList]
}
