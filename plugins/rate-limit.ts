import rateLimit from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Type, type Static } from 'typebox'
import { MAX_TIMER_MS } from '../schemas/index.js'
import { tokenDigest } from './auth.js'
import { RateLimitedError } from './http-errors.js'

export const RateLimitOptionsSchema = Type.Object({
  max: Type.Integer({ minimum: 1, description: 'requests allowed per token in each window, a positive integer' }),
  timeWindow: Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS, description: `the window in ms, a positive integer, at most ${MAX_TIMER_MS}` })
}, { description: 'a per-token limit: { max, timeWindow }' })

export type RateLimitOptions = Static<typeof RateLimitOptionsSchema>

// Registered after auth, so only valid tokens are counted; keyed by a digest of the token (after
// the scheme name, whatever its case), never the token itself.
const tokenKey = (request: FastifyRequest) => {
  const authorization = request.headers.authorization!
  return tokenDigest(authorization.slice(authorization.indexOf(' ') + 1).trim()).toString('base64')
}

/** Limits the requests of each token on the routes of the registering scope: 429 beyond the limit. */
export default fp<RateLimitOptions>(async function perTokenRateLimit (fastify, { max, timeWindow }) {
  await fastify.register(rateLimit, {
    max,
    timeWindow,
    keyGenerator: tokenKey,
    errorResponseBuilder: () => new RateLimitedError()
  })
}, { name: 'plant-store-rate-limit' })
