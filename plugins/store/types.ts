import type { NewPlant, Plant } from '../../schemas/index.js'

export interface ListOptions {
  /** Only plants with an id greater than this one (a keyset cursor). */
  after?: bigint
  limit: number
}

/**
 * A write's precondition (a PUT's or DELETE's If-Match): the revisions (revision.ts) the plant may
 * be at for the write to happen. Absent: whatever it is at. An empty list matches no revision.
 */
export interface WritePrecondition {
  ifRevision?: readonly string[]
}

/** What an update comes to: the plant as stored now (its revision with it, revision.ts), or why nothing was written. */
export type UpdateResult = Plant | 'not-found' | 'precondition-failed'

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
  /**
   * Resolves true when a plant was deleted, false when there was none; with a precondition (a store
   * that keeps revisions), 'precondition-failed' when the plant is at another revision, deleting nothing.
   */
  delete (id: bigint, precondition?: WritePrecondition): Promise<boolean | 'precondition-failed'>
  /**
   * Optional: replaces the name and tag of a stored plant, durably as create does, in one atomic
   * compare-and-set with the precondition: of writers holding one revision, exactly one wins.
   * A store without it answers PUT with 501.
   */
  update? (id: bigint, plant: Plant, precondition?: WritePrecondition): Promise<UpdateResult>
  /** Optional: the plants with exactly this tag, in ascending id order. A store without it answers `?tag=` with 501. */
  listTagged? (tag: string, options: ListOptions): Promise<NewPlant[]>
  /** Resolves when the store answers. */
  ping (): Promise<void>
  close (): Promise<void>
}

/** The methods every store has. */
export const STORE_METHODS = ['create', 'get', 'list', 'delete', 'ping', 'close'] as const

/** The methods a store may have: each a capability the routes use where it is there. */
export const OPTIONAL_STORE_METHODS = ['update', 'listTagged'] as const

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
