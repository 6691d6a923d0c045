import { Type, type Static } from 'typebox'
import { SCHEMA_ID_PREFIX } from './primitives.js'

export const HealthStatusSchema = Type.Object({
  status: Type.Literal('ok')
}, { $id: `${SCHEMA_ID_PREFIX}HealthStatus`, description: 'The service is alive, or ready' })

export type HealthStatus = Static<typeof HealthStatusSchema>
