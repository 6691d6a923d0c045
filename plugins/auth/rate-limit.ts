import fp from 'fastify-plugin'
import { identityOf } from './index.js'
import { RateLimitedError } from '../http/errors.js'
import type { RateLimitOptions } from '../http/limit-options.js'
import { secondsLeft, WindowCounter } from './window-counter.js'

/**
 * Limits the requests of each identity (a digest of its token, or what the host's `authenticate`
 * returned) on the routes of the registering scope: 429 with Retry-After beyond the limit.
 * Registered after auth, so only authenticated requests are counted. Its own counter rather than
 * @fastify/rate-limit: that plugin reads every route's `config.rateLimit` in each instance, so a
 * host's global instance and this one could not be told apart (nor their headers kept apart).
 */
export default fp<RateLimitOptions>(async function perIdentityRateLimit (fastify, { max, timeWindow }) {
  // Identities at their limit are kept over others when the table is full: a flood cannot reset them.
  const counter = new WindowCounter(timeWindow, undefined, max)
  fastify.addHook('onRequest', (request, reply, done) => {
    const now = Date.now()
    const window = counter.hit(identityOf(request), now)
    const reset = secondsLeft(window, now)
    reply.header('x-ratelimit-limit', max)
    reply.header('x-ratelimit-remaining', Math.max(0, max - window.count))
    reply.header('x-ratelimit-reset', reset)
    if (window.count <= max) return done()
    reply.header('retry-after', reset)
    done(new RateLimitedError())
  })
}, { name: 'plant-store-rate-limit' })
