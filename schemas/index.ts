import { type TSchema, Type, type Static } from 'typebox'
import { ErrorSchema } from './error.js'
import { HealthStatusSchema } from './health.js'
import { NewPlantSchema, PlantSchema } from './plant.js'

export * from './error.js'
export * from './health.js'
export * from './plant.js'
export * from './primitives.js'

/** The named schemas, added once to Fastify (OpenAPI components, serializers) and the validators. */
export const sharedSchemas = [ErrorSchema, HealthStatusSchema, PlantSchema, NewPlantSchema]

/** A `$ref` to a shared schema that keeps its static type, so routes get typed requests and replies. */
export const ref = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T>>({ $ref: `${(schema as { $id?: string }).$id}#` })
