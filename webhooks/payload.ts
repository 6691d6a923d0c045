import type { NewPlant } from '../schemas/plant.js'
import {
  PLANT_CREATED, PLANT_DELETED, PlantCreatedEventSchema, PlantDeletedEventSchema, type PlantCreatedEvent, type PlantDeletedEvent
} from '../schemas/webhook-events.js'

export { PLANT_CREATED, PLANT_DELETED }

// The keys as the event schemas (and so the OpenAPI document) name and order them.
const CREATED_KEYS = Object.keys(PlantCreatedEventSchema.properties) as Array<keyof PlantCreatedEvent>
const DELETED_KEYS = Object.keys(PlantDeletedEventSchema.properties) as Array<keyof PlantDeletedEvent>

// The events of one commit share its time: its JSON text is made once per commit, not per event.
let lastTime = Number.NaN
let lastTimestamp = ''
function timestampJson (at: Date): string {
  const time = at.getTime()
  if (time !== lastTime) {
    lastTime = time
    lastTimestamp = JSON.stringify(at.toISOString())
  }
  return lastTimestamp
}

/**
 * The event's text from the JSON text of each field, in the schema's order; a field whose text is
 * undefined is left out. Written by hand, not JSON.stringify: the id is an exact int64 (its digits),
 * never a rounded float.
 */
function eventText<K extends string> (fields: Record<K, string | undefined>, keys: readonly K[]): string {
  let text = ''
  for (const key of keys) {
    const value = fields[key]
    if (value !== undefined) text += `${text === '' ? '{' : ','}"${key}":${value}`
  }
  return `${text}}`
}

const CREATED_TYPE = JSON.stringify(PLANT_CREATED)
const DELETED_TYPE = JSON.stringify(PLANT_DELETED)

/**
 * The event text, made once at the commit and stored: every attempt sends these bytes. `data` is
 * squashed into the top level, so a plant.created body is also a valid NewPlant.
 */
export function plantCreatedPayload (plant: NewPlant, committedAt: Date): string {
  return eventText<keyof PlantCreatedEvent>({
    type: CREATED_TYPE,
    timestamp: timestampJson(committedAt),
    id: String(plant.id),
    name: JSON.stringify(plant.name),
    tag: plant.tag === undefined ? undefined : JSON.stringify(plant.tag)
  }, CREATED_KEYS)
}

/** A plant.deleted body: {type, timestamp, id}. */
export function plantDeletedPayload (id: bigint, deletedAt: Date): string {
  return eventText<keyof PlantDeletedEvent>({ type: DELETED_TYPE, timestamp: timestampJson(deletedAt), id: String(id) }, DELETED_KEYS)
}
