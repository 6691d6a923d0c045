import { Type, type Static } from 'typebox'
import { Int64, StorableText } from './primitives.js'

export const PlantSchema = Type.Object({
  name: StorableText('The name of the plant'),
  tag: Type.Optional(StorableText('Tag that specifies the type of the plant'))
}, { $id: 'Plant', description: 'A plant in the store' })

/** NewPlant is Plant plus a required int64 id. */
export const NewPlantSchema = Type.Object({
  id: Int64('Identification number of the plant'),
  ...PlantSchema.properties
}, { $id: 'NewPlant', description: 'A plant to create' })

export type Plant = Static<typeof PlantSchema>
export type NewPlant = Static<typeof NewPlantSchema>
