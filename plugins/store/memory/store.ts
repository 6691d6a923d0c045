import type { NewPlant, Plant } from '../../../schemas/index.js'
import { PlantExistsError } from '../../http/errors.js'
import { createMemoryOutbox } from './outbox.js'
import type { OutboxOptions, OutboxStore } from '../outbox.js'
import { SortedIds } from './sorted-ids.js'
import { toPlant, type ListOptions, type PlantStore } from '../types.js'

/** A store in the process's memory: for tests and trials, gone when the process ends. */
export function createMemoryStore (): PlantStore & OutboxStore {
  const plants = new Map<bigint, Plant>()
  const sortedIds = new SortedIds() // a page is a search and a walk, in O(log n + limit)
  let outbox: ReturnType<typeof createMemoryOutbox> | undefined
  return {
    async create (newPlant: NewPlant) {
      const { id, name, tag } = newPlant
      if (plants.has(id)) throw new PlantExistsError()
      const plant = toPlant(name, tag)
      plants.set(id, plant)
      sortedIds.add(id)
      outbox?.created(newPlant)
      return plant
    },
    async get (id: bigint) {
      return plants.get(id)
    },
    async list ({ after, limit }: ListOptions) {
      return sortedIds.page(after, limit).map((id) => ({ id, ...plants.get(id)! }))
    },
    async delete (id: bigint) {
      if (!plants.delete(id)) return false
      sortedIds.delete(id)
      outbox?.deleted(id)
      return true
    },
    async openOutbox (options: OutboxOptions) {
      outbox = createMemoryOutbox(options)
      return outbox.outbox
    },
    async ping () {},
    async close () {
      plants.clear()
      sortedIds.clear()
    }
  }
}
