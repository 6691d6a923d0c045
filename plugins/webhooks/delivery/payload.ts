import type { NewPlant } from '../../../schemas/plant.js'
import { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED } from '../../../schemas/protocol.js'
import type { EventPayloads } from '../../store/outbox.js'
import { messageId } from './signing.js'

export { PLANT_CREATED, PLANT_DELETED, PLANT_UPDATED }

// Event texts are written by hand, not by JSON.stringify: an id is an exact int64 (its digits),
// never a rounded float. The events of one commit share its time: its JSON text is made once per commit.
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

const CREATED_TYPE = JSON.stringify(PLANT_CREATED)
const DELETED_TYPE = JSON.stringify(PLANT_DELETED)
const UPDATED_TYPE = JSON.stringify(PLANT_UPDATED)

/**
 * The start of the plant.created texts of a commit: its type and time, and the id's key; the same
 * for every plant of the commit. The rest is plantCreatedTail's. A store may write that rest itself
 * from the row it inserts (the PostgreSQL store does, in SQL), so both keep the schema's order:
 * type, timestamp, id, name, tag (a test holds them to it).
 */
export function plantCreatedHead (committedAt: Date): string {
  return `{"type":${CREATED_TYPE},"timestamp":${timestampJson(committedAt)},"id":`
}

/** The rest of a plant.created text: the id's digits, the name, and the tag when there is one. */
export function plantCreatedTail (plant: NewPlant): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`
  return `${plant.id},"name":${JSON.stringify(plant.name)}${tag}}`
}

/**
 * The event text, made once at the commit and stored: every attempt sends these bytes. `data` is
 * squashed into the top level, so a plant.created body is also a valid NewPlant.
 */
export function plantCreatedPayload (plant: NewPlant, committedAt: Date): string {
  return plantCreatedHead(committedAt) + plantCreatedTail(plant)
}

/** A plant.deleted body: {type, timestamp, id}, in the schema's order. */
export function plantDeletedPayload (id: bigint, deletedAt: Date): string {
  return `{"type":${DELETED_TYPE},"timestamp":${timestampJson(deletedAt)},"id":${id}}`
}

/** A plant.updated body: {type, timestamp, id, name, tag}, the plant as stored after the update, in the schema's order. */
export function plantUpdatedPayload (plant: NewPlant, updatedAt: Date): string {
  return `{"type":${UPDATED_TYPE},"timestamp":${timestampJson(updatedAt)},"id":` + plantCreatedTail(plant)
}

/** What the store writes for each event, inside the plant's own transaction: the webhook body and the feed's event, one text. */
export const eventPayloads: EventPayloads = {
  created: (plant, at) => plantCreatedPayload(plant, at),
  createdHead: (at) => plantCreatedHead(at),
  deleted: (id, at) => plantDeletedPayload(id, at),
  updated: (plant, at) => plantUpdatedPayload(plant, at),
  messageId
}
