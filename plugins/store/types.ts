import type { NewPlant, Plant } from '../../schemas/index.js'

export interface ListOptions {
  /** Only plants with an id greater than this one (a keyset cursor). */
  after?: bigint
  limit: number
}

/**
 * What the routes need from a store. Every store behaves the same: `create` resolves only once
 * the plant is durable on that store, and rejects with PlantExistsError when the id is taken
 * (leaving the stored plant unchanged); any operation rejects with StoreUnavailableError when
 * the store cannot answer.
 */
export interface PlantStore {
  create (plant: NewPlant): Promise<Plant>
  get (id: bigint): Promise<Plant | undefined>
  /** Plants in ascending id order. */
  list (options: ListOptions): Promise<NewPlant[]>
  /** Resolves true when a plant was deleted, false when there was none. */
  delete (id: bigint): Promise<boolean>
  /** Resolves when the store answers. */
  ping (): Promise<void>
  close (): Promise<void>
}

/** The methods every store has. */
export const STORE_METHODS = ['create', 'get', 'list', 'delete', 'ping', 'close'] as const

/** Whether a value has the methods of a PlantStore. */
export const isPlantStore = (value: unknown): value is PlantStore =>
  typeof value === 'object' && value !== null &&
  STORE_METHODS.every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** The Plant part of a stored row: `tag` only when it has one. */
export function toPlant (name: string, tag: string | null | undefined): Plant {
  return tag == null ? { name } : { name, tag }
}

/** Where a store's warnings go: the plugin passes its logger. */
export interface StoreLog {
  warn (message: string): void
  info (message: string): void
}

export const noLog: StoreLog = { warn () {}, info () {} }
