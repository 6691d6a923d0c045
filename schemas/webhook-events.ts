import { Type, type Static } from 'typebox'
import { plantSchemas } from './plant.js'
import { DEFAULT_MAX_TEXT_LENGTH, Int64 } from './primitives.js'
import { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED } from './protocol.js'

export { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED }

const EXAMPLE_TIME = '2026-11-24T00:20:00.123Z'

const EventType = <T extends string>(type: T) =>
  Type.Literal(type, { description: 'The event type (Standard Webhooks\' `type`)', examples: [type] })

const EventTime = (what: string) => Type.String({
  format: 'date-time',
  // Date#toISOString: always UTC, always milliseconds.
  maxLength: EXAMPLE_TIME.length,
  description: `When ${what}, as committed to the store: ISO 8601 in UTC with milliseconds (not the time of the attempt)`,
  examples: [EXAMPLE_TIME]
})

/**
 * The webhook events as Standard Webhooks payloads with `data` squashed into the top level: a
 * plant.created body is also a valid NewPlant. The keys are in the order the payload writes them.
 * No `$id`: the OpenAPI document carries them inline under `webhooks`, so that a host's document
 * needs nothing else declared for them.
 */
export function webhookEventSchemas (maxTextLength = DEFAULT_MAX_TEXT_LENGTH) {
  const { NewPlant } = plantSchemas(maxTextLength)
  const PlantCreatedEvent = Type.Object({
    type: EventType(PLANT_CREATED),
    timestamp: EventTime('the plant was created'),
    ...NewPlant.properties
  }, { title: 'PlantCreatedEvent', description: 'A plant was created: the plant as stored, with its id (also a valid NewPlant)' })
  const PlantDeletedEvent = Type.Object({
    type: EventType(PLANT_DELETED),
    timestamp: EventTime('the plant was deleted'),
    id: Int64('Identification number of the deleted plant (it may be created again afterwards)', 1)
  }, { title: 'PlantDeletedEvent', description: 'A plant was deleted' })
  const PlantUpdatedEvent = Type.Object({
    type: EventType(PLANT_UPDATED),
    timestamp: EventTime('the plant was updated'),
    ...NewPlant.properties
  }, { title: 'PlantUpdatedEvent', description: 'A plant was updated (PUT): the plant as stored now, with its id' })
  return { PlantCreatedEvent, PlantDeletedEvent, PlantUpdatedEvent }
}

export const {
  PlantCreatedEvent: PlantCreatedEventSchema, PlantDeletedEvent: PlantDeletedEventSchema, PlantUpdatedEvent: PlantUpdatedEventSchema
} = webhookEventSchemas()

export type PlantCreatedEvent = Static<typeof PlantCreatedEventSchema>
export type PlantDeletedEvent = Static<typeof PlantDeletedEventSchema>
export type PlantUpdatedEvent = Static<typeof PlantUpdatedEventSchema>
