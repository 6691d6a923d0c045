import { Type, type Static } from 'typebox'
import { DEFAULT_MAX_TEXT_LENGTH, Int64, SCHEMA_ID_PREFIX, STORABLE_TEXT_PATTERN, StorableText } from './primitives.js'

/** The most plants a page holds (`limit`'s maximum). */
export const MAX_PAGE_SIZE = 1000
/** The most bytes of JSON a page holds: it ends early rather than grow past this (one plant at least). */
export const MAX_PAGE_BYTES = 1024 * 1024

/**
 * The plant schemas, with names and tags of at most `maxTextLength` characters. Another limit than
 * the default gets `$id`s of its own (plant-store.max50.Plant), so that two plugin instances with
 * different limits each document their own in a host's OpenAPI document.
 */
export function plantSchemas (maxTextLength = DEFAULT_MAX_TEXT_LENGTH) {
  const prefix = maxTextLength === DEFAULT_MAX_TEXT_LENGTH ? SCHEMA_ID_PREFIX : `${SCHEMA_ID_PREFIX}max${maxTextLength}.`
  const Plant = Type.Object({
    name: StorableText('The name of the plant', 'Monstera', maxTextLength),
    tag: Type.Optional(StorableText('Tag that specifies the type of the plant', 'tropical', maxTextLength))
  }, { $id: `${prefix}Plant`, description: 'A plant in the store' })

  /** NewPlant is Plant plus a required int64 id. */
  const NewPlant = Type.Object({
    id: Int64('Identification number of the plant', 1),
    ...Plant.properties
  }, { $id: `${prefix}NewPlant`, description: 'A plant to create' })

  /** What PUT /plants/{id} takes: a Plant, and the id again if the client likes (it must be the path's). */
  const PlantUpdate = Type.Object({
    id: Type.Optional(Int64('Identification number of the plant: when sent, the id in the path', 1)),
    ...Plant.properties
  }, { $id: `${prefix}PlantUpdate`, description: 'A plant\'s new name and tag: it replaces the stored ones (a tag left out is removed)' })

  // Its own schema, not NewPlant's: Swagger UI labels an item by its schema's title and description.
  const ListedPlant = Type.Object(NewPlant.properties, { title: 'ListedPlant', description: 'A stored plant, with its id' })
  const PlantList = Type.Array(ListedPlant, {
    $id: `${prefix}PlantList`,
    maxItems: MAX_PAGE_SIZE,
    description: `Plants in ascending id order: at most \`limit\` plants and ${MAX_PAGE_BYTES} bytes of JSON`
  })
  return { Plant, NewPlant, PlantUpdate, PlantList }
}

// The schemas with the default limits: the types, and the `$ref`s the routes use.
export const { Plant: PlantSchema, NewPlant: NewPlantSchema, PlantList: PlantListSchema } = plantSchemas()

export type Plant = Static<typeof PlantSchema>
export type NewPlant = Static<typeof NewPlantSchema>

export const PlantIdSchema = Type.Object({
  id: Int64('Identification number of the plant', 1)
})

/** The longest text a request line or header field may carry here: Node's default header block. */
export const MAX_HEADER_FIELD_LENGTH = 16 * 1024

export const DEFAULT_PAGE_SIZE = 100

export const PlantListQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
    description: 'The most plants in the page, in decimal digits (a page also ends early at its size in bytes)'
  })),
  // No example: Swagger UI would pre-fill it and hide the plants a first try just created.
  after: Type.Optional(Int64('Return only plants with a greater id: the last id of the previous page, in decimal digits')),
  // As long as a request's header block allows (Node's default: 16 KiB); a longer tag is stored, but not listed by.
  tag: Type.Optional(Type.String({
    pattern: STORABLE_TEXT_PATTERN,
    maxLength: MAX_HEADER_FIELD_LENGTH,
    description: 'Return only plants with exactly this tag (an empty value: the empty tag), percent-encoded'
  }))
})

// One entity tag or more (RFC 9110 8.8.3), or `*`.
const ENTITY_TAGS_PATTERN = '^\\s*(\\*|(W/)?"[^"]*"(\\s*,\\s*(W/)?"[^"]*")*)\\s*$'
const entityTags = (description: string) => Type.Optional(Type.String({ pattern: ENTITY_TAGS_PATTERN, maxLength: MAX_HEADER_FIELD_LENGTH, description }))

/** The request headers of a conditional read (RFC 9110 13.1.2). */
export const IfNoneMatchHeadersSchema = Type.Object({
  'if-none-match': entityTags('ETags of the plant the client has (or `*`): when one matches, 304 Not Modified without a body')
})

/** The request headers of a conditional write (RFC 9110 13.1.1). */
export const IfMatchHeadersSchema = Type.Object({
  'if-match': entityTags('The ETag(s) of the plant as the client last read it (or `*`): when the plant is at another, 412 and nothing changes')
})
