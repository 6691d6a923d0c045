import type { NewPlant } from '../schemas/index.js'

// The JSON a plant takes in a page: {"id":…,"name":…,"tag":…}, and the comma before it.
const ENVELOPE_BYTES = '{"id":,"name":}'.length + 1
const TAG_KEY_BYTES = ',"tag":'.length
const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text))

/** The bytes `plant` takes in the JSON of a page, as the serializer writes it. */
function plantBytes ({ id, name, tag }: NewPlant): number {
  return ENVELOPE_BYTES + String(id).length + jsonBytes(name) + (tag === undefined ? 0 : TAG_KEY_BYTES + jsonBytes(tag))
}

/**
 * The first plants of `plants` whose JSON array fits in `maxBytes`, and always the first plant,
 * so that the last id of every page is a cursor that moves on. The plants after it are not lost:
 * the next page (`after` that last id) starts with them.
 */
export function fitPage (plants: NewPlant[], maxBytes: number): NewPlant[] {
  let bytes = 1 // "[" and "]", less the first plant's comma
  for (let index = 0; index < plants.length; index++) {
    bytes += plantBytes(plants[index])
    if (bytes > maxBytes && index > 0) return plants.slice(0, index)
  }
  return plants
}
