import type { Plant } from '../schemas/plant.js'
import { UnexpectedResponseError } from './errors.js'

/** What `get` with `ifNoneMatch` resolves while the caller's copy is current (304 Not Modified). */
export const NOT_MODIFIED: unique symbol = Symbol('plant-store: not modified')

const etags = new WeakMap<object, string>()

/**
 * The ETag the service sent with a Plant the client resolved (create, get, update), undefined
 * when it sent none (a host's store that keeps no revisions): for `ifMatch` and `ifNoneMatch`.
 */
export const etagOf = (plant: Plant): string | undefined => etags.get(plant)

/** `plant`, its answer's ETag noted. */
export function withEtag (plant: Plant, response: Response): Plant {
  const etag = response.headers.get('etag')
  if (etag !== null) etags.set(plant, etag)
  return plant
}

const NEXT = /<([^>]*)>\s*;\s*rel="?next"?/

/**
 * The path (and query) of the next page, from a page's Link rel="next" (RFC 8288), resolved
 * against the page's URL; undefined on the last page. A link that leaves `baseUrl` is refused: the
 * token is never sent elsewhere.
 */
export function nextPageUrl (response: Response, url: string, baseUrl: string): string | undefined {
  const link = response.headers.get('link')
  const target = link === null ? undefined : NEXT.exec(link)?.[1]
  if (target === undefined) return undefined
  const next = new URL(target, url).href
  if (!next.startsWith(`${baseUrl}/`)) throw new UnexpectedResponseError(response.status, `GET /plants links its next page outside baseUrl: ${next}`)
  return next.slice(baseUrl.length)
}
