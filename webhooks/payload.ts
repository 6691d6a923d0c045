import type { NewPlant } from '../schemas/plant.js'

export const PLANT_CREATED = 'plant.created'
export const PLANT_DELETED = 'plant.deleted'

// Written by hand, not JSON.stringify: the id is an exact int64 (a BigInt), never a rounded float.
const head = (type: string, at: Date, id: bigint) =>
  `{"type":"${type}","timestamp":"${at.toISOString()}","id":${id}`

/**
 * The event text, made once at the commit and stored: every attempt sends these bytes. `data` is
 * squashed into the top level, so a plant.created body is also a valid NewPlant.
 */
export function plantCreatedPayload (plant: NewPlant, committedAt: Date): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  return `${head(PLANT_CREATED, committedAt, plant.id)},"name":${JSON.stringify(plant.name)}${tag}}`
}

/** A plant.deleted body: {type, timestamp, id}. */
export function plantDeletedPayload (id: bigint, deletedAt: Date): string {
  return `${head(PLANT_DELETED, deletedAt, id)}}`
}
