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

// RFC 8288 section 3: link-values `<target>; name=value; …`, each value a token or a quoted string.
const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^\s;,=]+\s*(?:=\s*(?:"[^"]*"|[^\s;,"]*))?)*)/g
const PARAM = /;\s*([^\s;,=]+)\s*(?:=\s*(?:"([^"]*)"|([^\s;,"]*)))?/g

/** Whether a link-value's parameters have a rel (one or more space-separated types) with "next". */
function relNext (params: string): boolean {
  for (const [, name, quoted, token] of params.matchAll(PARAM)) {
    if (name.toLowerCase() === 'rel') return (quoted ?? token ?? '').toLowerCase().split(/\s+/).includes('next')
  }
  return false
}

/** The target of the first link-value with rel "next". */
function nextTarget (field: string): string | undefined {
  for (const [, target, params] of field.matchAll(LINK_VALUE)) if (relNext(params)) return target
  return undefined
}

/**
 * The path (and query) of the next page, from a page's Link rel="next" (RFC 8288), resolved
 * against the page's URL; undefined on the last page. A link that leaves `baseUrl` is refused: the
 * token is never sent elsewhere.
 */
export function nextPageUrl (response: Response, url: string, baseUrl: string): string | undefined {
  const link = response.headers.get('link')
  const target = link === null ? undefined : nextTarget(link)
  if (target === undefined) return undefined
  const next = new URL(target, url).href
  if (!next.startsWith(`${baseUrl}/`)) throw new UnexpectedResponseError(response.status, `GET /plants links its next page outside baseUrl: ${next}`)
  return next.slice(baseUrl.length)
}
