import { Type, type Static } from 'typebox'
import { Int64, StorableText, ref } from './primitives.js'

export const PlantSchema = Type.Object({
  name: StorableText('The name of the plant', 'Monstera'),
  tag: Type.Optional(StorableText('Tag that specifies the type of the plant', 'tropical'))
}, { $id: 'Plant', description: 'A plant in the store' })

/** NewPlant is Plant plus a required int64 id. */
export const NewPlantSchema = Type.Object({
  id: Int64('Identification number of the plant'),
  ...PlantSchema.properties
}, { $id: 'NewPlant', description: 'A plant to create' })

export type Plant = Static<typeof PlantSchema>
export type NewPlant = Static<typeof NewPlantSchema>

export const PlantIdSchema = Type.Object({
  id: Int64('Identification number of the plant')
})

export const MAX_PAGE_SIZE = 1000

export const PlantListQuerySchema = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 100, description: 'The most plants to return' }),
  after: Type.Optional(Int64('Return only plants with a greater id: the last id of the previous page', 100))
})

export const PlantListSchema = Type.Array(ref(NewPlantSchema), {
  $id: 'PlantList', description: 'Plants in ascending id order'
})
