import rateLimit from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { tokenDigest } from './auth.js'
import { RateLimitedError } from './http-errors.js'
import type { RateLimitOptions } from './limit-options.js'

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
