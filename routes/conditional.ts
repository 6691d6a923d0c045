import type { FastifyReply } from 'fastify'
import type { Plant } from '../schemas/index.js'
import { revisionOf } from '../plugins/store/revision.js'
import type { WritePrecondition } from '../plugins/store/types.js'

// Conditional requests (RFC 9110 section 13) on one plant, whose ETag is its revision.

/** A plant's ETag: strong, its revision in quotes. The one place an ETag is made from a revision. */
export const etagOf = (revision: string) => `"${revision}"`

/** Sets the ETag of `plant` on the reply, where its store gave it a revision; `plant` back. */
export function withEtag (reply: FastifyReply, plant: Plant): Plant {
  const revision = revisionOf(plant)
  if (revision !== undefined) reply.header('etag', etagOf(revision))
  return plant
}

const ENTITY_TAG = /(W\/)?"([^"]*)"/g

/** The entity tags of an If-Match or If-None-Match field: `*`, or each tag's opaque part and whether it is weak. */
function entityTags (field: string): '*' | Array<{ weak: boolean, opaque: string }> {
  if (field.trim() === '*') return '*'
  return [...field.matchAll(ENTITY_TAG)].map(([, weak, opaque]) => ({ weak: weak !== undefined, opaque }))
}

/**
 * A write's precondition from its If-Match: none when absent, or `*` (any current plant: one that
 * is missing is a 404 before any precondition, RFC 9110 13.2.1); otherwise the revisions of its
 * strong tags (If-Match compares strongly: a weak tag never matches).
 */
export function ifMatchPrecondition (field: string | undefined): WritePrecondition | undefined {
  if (field === undefined) return undefined
  const tags = entityTags(field)
  return tags === '*' ? undefined : { ifRevision: tags.filter(({ weak }) => !weak).map(({ opaque }) => opaque) }
}

/** Whether If-None-Match matches a plant with ETag `etag` (undefined: none), by weak comparison (RFC 9110 13.1.2). */
export function noneMatchMatches (field: string, etag: string | undefined): boolean {
  const tags = entityTags(field)
  return tags === '*' || (etag !== undefined && tags.some(({ opaque }) => etagOf(opaque) === etag))
}
