import { ErrorSchema } from './error.js'
import { HealthStatusSchema } from './health.js'
import { NewPlantSchema, PlantListSchema, PlantSchema } from './plant.js'

export * from './error.js'
export * from './health.js'
export * from './plant.js'
export * from './primitives.js'
export * from './security.js'

/** The named schemas, added once to Fastify (OpenAPI components, serializers) and the validators. */
export const sharedSchemas = [ErrorSchema, HealthStatusSchema, PlantSchema, NewPlantSchema, PlantListSchema]
