import type { NewPlant, Plant } from '../../schemas/index.js'
import { PlantExistsError } from '../http-errors.js'
import { toPlant, type ListOptions, type PlantStore } from './types.js'

/** The index of the first id in the sorted array that is greater than `id`. */
function indexAfter (ids: readonly bigint[], id: bigint): number {
  let low = 0
  let high = ids.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (ids[middle] <= id) low = middle + 1
    else high = middle
  }
  return low
}

/** A store in the process's memory: for tests and trials, gone when the process ends. */
export function createMemoryStore (): PlantStore {
  const plants = new Map<bigint, Plant>()
  const sortedIds: bigint[] = [] // kept sorted, so a page is a binary search and a slice
  return {
    async create ({ id, name, tag }: NewPlant) {
      if (plants.has(id)) throw new PlantExistsError()
      const plant = toPlant(name, tag)
      plants.set(id, plant)
      sortedIds.splice(indexAfter(sortedIds, id), 0, id)
      return plant
    },
    async get (id: bigint) {
      return plants.get(id)
    },
    async list ({ after, limit }: ListOptions) {
      const start = after === undefined ? 0 : indexAfter(sortedIds, after)
      return sortedIds.slice(start, start + limit).map((id) => ({ id, ...plants.get(id)! }))
    },
    async delete (id: bigint) {
      if (!plants.delete(id)) return false
      sortedIds.splice(indexAfter(sortedIds, id) - 1, 1)
      return true
    },
    async ping () {},
    async close () {
      plants.clear()
      sortedIds.length = 0
    }
  }
}
