import type { NewPlant, Plant } from '../../../schemas/index.js'
import { PlantExistsError } from '../../http/errors.js'
import { createMemoryOutbox } from './outbox.js'
import type { OutboxOptions, OutboxStore } from '../outbox.js'
import { firstRevision, revised, revisionOf, satisfies } from '../revision.js'
import { SortedIds } from './sorted-ids.js'
import { toPlant, type ListOptions, type PlantStore, type WritePrecondition } from '../types.js'

/**
 * The ids of each tag, in order: a tag's page is a search and a walk too. Built from the plants on
 * the first list by tag and kept from then on: a store never listed by tag (most) pays nothing for
 * it on a create (a skip-list node per tagged plant, ~10 % of a create's CPU in `npm run bench`).
 */
class TagIndex {
  #ids: Map<string, SortedIds> | undefined

  constructor (private readonly plants: ReadonlyMap<bigint, Plant>, private readonly sortedIds: SortedIds) {}

  add (tag: string | undefined, id: bigint) {
    if (tag === undefined || this.#ids === undefined) return
    let ids = this.#ids.get(tag)
    if (ids === undefined) this.#ids.set(tag, ids = new SortedIds())
    ids.add(id)
  }

  delete (tag: string | undefined, id: bigint) {
    if (tag !== undefined) this.#ids?.get(tag)?.delete(id)
  }

  page (tag: string, after: bigint | undefined, limit: number): bigint[] {
    if (this.#ids === undefined) {
      this.#ids = new Map()
      // In id order: each id is appended after the largest, without a search.
      for (const id of this.sortedIds.page(undefined, this.plants.size)) this.add(this.plants.get(id)!.tag, id)
    }
    return this.#ids.get(tag)?.page(after, limit) ?? []
  }

  clear () {
    this.#ids = undefined
  }
}

/** A store in the process's memory: for tests and trials, gone when the process ends. */
export function createMemoryStore (): PlantStore & Required<Pick<PlantStore, 'update' | 'listTagged'>> & OutboxStore {
  const plants = new Map<bigint, Plant>()
  const sortedIds = new SortedIds() // a page is a search and a walk, in O(log n + limit)
  const tags = new TagIndex(plants, sortedIds)
  let outbox: ReturnType<typeof createMemoryOutbox> | undefined
  const withIds = (ids: bigint[]) => ids.map((id) => ({ id, ...plants.get(id)! }))
  return {
    async create (newPlant: NewPlant) {
      const { id, name, tag } = newPlant
      if (plants.has(id)) throw new PlantExistsError()
      const plant = revised(toPlant(name, tag), firstRevision())
      plants.set(id, plant)
      sortedIds.add(id)
      tags.add(tag, id)
      outbox?.created(newPlant)
      return plant
    },
    async get (id: bigint) {
      return plants.get(id)
    },
    async list ({ after, limit }: ListOptions) {
      return withIds(sortedIds.page(after, limit))
    },
    async listTagged (tag: string, { after, limit }: ListOptions) {
      return withIds(tags.page(tag, after, limit))
    },
    async update (id: bigint, { name, tag }: Plant, precondition?: WritePrecondition) {
      const stored = plants.get(id)
      if (stored === undefined) return 'not-found'
      const revision = revisionOf(stored)!
      if (!satisfies(revision, precondition)) return 'precondition-failed'
      const plant = revised(toPlant(name, tag), BigInt(revision) + 1n)
      plants.set(id, plant)
      tags.delete(stored.tag, id)
      tags.add(tag, id)
      outbox?.updated({ id, ...plant })
      return plant
    },
    async delete (id: bigint, precondition?: WritePrecondition) {
      const stored = plants.get(id)
      if (stored === undefined) return false
      if (!satisfies(revisionOf(stored)!, precondition)) return 'precondition-failed'
      plants.delete(id)
      sortedIds.delete(id)
      tags.delete(stored.tag, id)
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
      tags.clear()
    }
  }
}
