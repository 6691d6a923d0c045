import createError from '@fastify/error'
import type { StoreLog } from './types.js'

/**
 * Why a store refuses data a newer release wrote: that release may have changed what the tables
 * mean, and writing to them silently would be a downgrade nobody chose.
 */
export const newerSchema = (version: number, known: number) =>
  `schema version ${version} was written by a newer plant-store (this one knows up to ${known}): run that release, or restore a backup taken before the upgrade`

// Past this, a version is no release's: a million schema changes will not happen.
export const MAX_PLAUSIBLE_VERSION = 1_000_000

/** A stored version that no release writes (negative, huge, not a whole number, null): what it is and what to do. */
export const oddSchema = (shown: string, known: number, reset: string) =>
  `schema version ${shown} is not one plant-store writes (a whole number, ${known} for this release): it was set by hand or by another program; ` +
  `if the data is plant-store's, ${reset} to the version its tables are at, or restore a backup`

/** How a stored version reads to a release that knows up to `known`: usable, newer, or no release's. */
export function versionKind (version: unknown, known: number): 'known' | 'newer' | 'odd' {
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0 || version > MAX_PLAUSIBLE_VERSION) return 'odd'
  return version > known ? 'newer' : 'known'
}

/** What every operation answers once a store found a schema newer than it knows: 503, its own message. */
export const SchemaNewerError = createError('PLANT_STORE_SCHEMA_NEWER',
  'The store\'s schema is newer than this release: this instance takes no requests until it runs the release that upgraded it', 503, Error, false)

/**
 * What the log says, once, when a running store finds at `where` a version it cannot serve (a newer
 * release's, or no release's): the versions, and what follows; undefined for one it knows.
 */
export function refusalWhileRunning (where: string, version: number, known: number, reset: string): string | undefined {
  const kind = versionKind(version, known)
  if (kind === 'known') return undefined
  return kind === 'newer' ? newerWhileRunning(where, version, known) : `plant-store: ${where}: ${oddSchema(String(version), known, reset)}; ${THEN}`
}

const THEN = 'every plant route and /readyz answer 503 and nothing is written from now on'

/** The line for a version newer than `known`, found while running at `where`. */
export const newerWhileRunning = (where: string, version: number, known: number) =>
  `plant-store: ${where}: schema version ${version} was written by a newer plant-store while this one (which knows up to ${known}) ran: ` +
  `${THEN}; replace this instance with the newer release`

/**
 * Whether a running store found its schema upgraded by a newer release. From then on it refuses
 * every operation (a downgrade nobody chose otherwise): once set, for good, with one log line.
 */
export class SchemaWatch {
  #found: Error | undefined

  constructor (readonly log: StoreLog) {}

  /** Throws SchemaNewerError once a newer schema was found. */
  assertKnown () {
    if (this.#found !== undefined) throw this.#found
  }

  /** A write or probe found a newer schema: logged the first time; the error to throw. */
  found (line: string): Error {
    if (this.#found === undefined) {
      this.log.warn(line)
      this.#found = new SchemaNewerError()
    }
    return this.#found
  }
}
