import type { NewPlant } from '../schemas/plant.js'
import {
  PLANT_CREATED, PLANT_DELETED, PlantCreatedEventSchema, PlantDeletedEventSchema, type PlantCreatedEvent, type PlantDeletedEvent
} from '../schemas/webhook-events.js'

export { PLANT_CREATED, PLANT_DELETED }

// The keys as the event schemas (and so the OpenAPI document) name and order them.
const CREATED_KEYS = Object.keys(PlantCreatedEventSchema.properties) as Array<keyof PlantCreatedEvent>
const DELETED_KEYS = Object.keys(PlantDeletedEventSchema.properties) as Array<keyof PlantDeletedEvent>

// Written by hand, not JSON.stringify: the id is an exact int64 (a BigInt), never a rounded float.
function eventText<T extends object> (event: T, keys: ReadonlyArray<keyof T>): string {
  let text = ''
  for (const key of keys) {
    const value = event[key]
    if (value === undefined) continue
    text += `${text === '' ? '{' : ','}"${String(key)}":${typeof value === 'bigint' ? value : JSON.stringify(value)}`
  }
  return `${text}}`
}

/**
 * The event text, made once at the commit and stored: every attempt sends these bytes. `data` is
 * squashed into the top level, so a plant.created body is also a valid NewPlant.
 */
export function plantCreatedPayload (plant: NewPlant, committedAt: Date): string {
  const event: PlantCreatedEvent = { type: PLANT_CREATED, timestamp: committedAt.toISOString(), id: plant.id, name: plant.name }
  if (plant.tag !== undefined) event.tag = plant.tag
  return eventText(event, CREATED_KEYS)
}

/** A plant.deleted body: {type, timestamp, id}. */
export function plantDeletedPayload (id: bigint, deletedAt: Date): string {
  return eventText<PlantDeletedEvent>({ type: PLANT_DELETED, timestamp: deletedAt.toISOString(), id }, DELETED_KEYS)
}
