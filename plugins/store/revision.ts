import type { Plant } from '../../schemas/index.js'
import type { WritePrecondition } from './types.js'

/**
 * A plant's revision: an opaque token (decimal digits) that changes with each write to it, which
 * the routes give as its ETag. The stores that keep revisions (memory, SQLite, PostgreSQL) start a
 * plant at a random one and add 1 with each update, so that a plant deleted and created again does
 * not take up an ETag its predecessor had. A store hands the revision along with the Plant object
 * it resolves, on the object under a symbol of its own and not enumerable: the Plant itself stays
 * {name, tag} (to JSON, to a spread, to a deep comparison), and a host's wrapper that passes the
 * object on keeps it (one that makes another object answers without an ETag). Not a WeakMap beside
 * the objects: a create paid 0.4 to 1.4 µs for its entry (a memory store's plants all stay in it).
 */
const REVISION = Symbol('plant-store.revision')

type Revision = bigint | number | string

/** `plant`, with its revision noted: as the store read it, made text only when asked for (most plants are never read back). */
export function revised (plant: Plant, revision: Revision): Plant {
  return Object.defineProperty(plant, REVISION, { value: revision, writable: true })
}

/** The revision a store noted with `plant`, if it did. */
export function revisionOf (plant: Plant): string | undefined {
  const revision = (plant as Plant & { [REVISION]?: Revision })[REVISION]
  return revision === undefined ? undefined : String(revision)
}

// 2^52: the revisions a plant goes through stay exact in a JavaScript number and an int8.
const REVISION_SPACE = 2 ** 52

/** A new plant's revision: random, so that a plant created again after a delete has another. */
export const firstRevision = (): number => 1 + Math.floor(Math.random() * REVISION_SPACE)

/** Whether a plant at `revision` may be written under `precondition`. */
export const satisfies = (revision: string, precondition: WritePrecondition | undefined): boolean =>
  precondition?.ifRevision === undefined || precondition.ifRevision.includes(revision)

/** The SQL expression a PostgreSQL plants table's revision column defaults to: firstRevision's range. */
export const FIRST_REVISION_SQL = `(1 + floor(random() * ${REVISION_SPACE}))::int8`
