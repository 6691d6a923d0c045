import { PlantExistsError, StoreUnavailableError, type ListOptions, type NewPlant, type Plant, type PlantStore } from 'plant-store'

/**
 * A store of the host's own, written from the README: a Map stands in for the host's database.
 * `create` rejects with PlantExistsError for a taken id (409) and every operation with
 * StoreUnavailableError while the database cannot answer (503).
 */
export class MapStore implements PlantStore {
  readonly #plants = new Map<bigint, Plant>()
  /** Set to false to act as a database that is down. */
  reachable = true

  #check () {
    if (!this.reachable) throw new StoreUnavailableError()
  }

  async create ({ id, name, tag }: NewPlant): Promise<Plant> {
    this.#check()
    if (this.#plants.has(id)) throw new PlantExistsError()
    const plant = tag === undefined ? { name } : { name, tag }
    this.#plants.set(id, plant)
    return plant
  }

  async get (id: bigint): Promise<Plant | undefined> {
    this.#check()
    return this.#plants.get(id)
  }

  async list ({ after, limit }: ListOptions): Promise<NewPlant[]> {
    this.#check()
    return [...this.#plants.keys()]
      .filter((id) => after === undefined || id > after)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit)
      .map((id) => ({ id, ...this.#plants.get(id)! }))
  }

  async delete (id: bigint): Promise<boolean> {
    this.#check()
    return this.#plants.delete(id)
  }

  async ping (): Promise<void> {
    this.#check()
  }

  async close (): Promise<void> {}
}
