import { hash, timingSafeEqual } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AuthThrottledError, UnauthenticatedError, UnauthorizedError } from '../http/errors.js'
import type { WindowLimit } from '../http/limit-options.js'
import { declareVerifiedToken, markVerified } from './verified-token.js'
import { addressKey, secondsLeft, WindowCounter } from './window-counter.js'

/** What a host's `authenticate` returns: who the request is from (the rate limit's key), or a refusal. */
export type Identity = string | false | null | undefined

/** The host's own authentication, handed the request before every plant route. */
export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Identity | Promise<Identity>

export interface AuthOptions {
  /** The accepted bearer tokens (the plugin's own authentication). */
  tokens?: readonly string[] | undefined
  /** The host's authentication instead, when given. */
  authenticate?: Authenticate | undefined
  /** Failed authentications allowed per client address in a window, or false for no limit. */
  failureLimit: WindowLimit | false
}

export const CHALLENGE = 'Bearer realm="plant-store"'

const BEARER_TOKEN_SENT = /^bearer +\S/i

/** A fixed-length digest of a token, safe to use as a key (the rate limit's). */
export const tokenDigest = (token: string) => hash('sha256', token, 'buffer')

// UTF-8 takes at most 3 bytes per UTF-16 code unit.
const MAX_UTF8_BYTES_PER_UNIT = 3
// The padded width, whatever the tokens up to 85 characters (64 hex digits, 43 of base64url for 32
// random bytes): where the cost of copying a presented token stops growing says nothing of their length.
const MIN_PADDED_BYTES = 256

/**
 * Compares the presented token with every configured one in constant time, without stopping at a
 * match: each is held as UTF-8 zero-padded to one width (a longer presented token is cut to it,
 * and refused), so the time taken tells neither the length of a token nor which one matched.
 * Equal padded bytes and equal byte lengths mean equal tokens. Cheaper than hashing the
 * presented token (~0.5 against ~1.1 us, for two tokens).
 */
export function tokenChecker (tokens: readonly string[]) {
  const longest = Math.max(0, ...tokens.map((token) => token.length))
  const width = Math.max(MIN_PADDED_BYTES, longest * MAX_UTF8_BYTES_PER_UNIT)
  const known = tokens.map((token) => {
    const padded = Buffer.alloc(width)
    return { padded, bytes: padded.write(token) }
  })
  const presentedBytes = Buffer.alloc(width)
  return (presented: string): boolean => {
    presentedBytes.fill(0)
    const bytes = presentedBytes.write(presented) // at most `width` bytes
    let matched = 0
    // Bitwise, not && or ||: every comparison runs, whatever the ones before found.
    for (const { padded, bytes: knownBytes } of known) {
      matched |= Number(timingSafeEqual(presentedBytes, padded)) & Number(bytes === knownBytes)
    }
    return (matched & Number(presented.length <= longest)) === 1
  }
}

/** How many Authorization fields a raw header (or trailer) list holds, whatever their case. */
function authorizationFields (raw: string[]): number {
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 13 && raw[i].toLowerCase() === 'authorization') seen++
  }
  return seen
}

/**
 * The token must come once, in the Authorization header (RFC 6750 §2: one method per request).
 * Node keeps only the first of repeated headers, so the raw list is counted; a token in the query
 * string (RFC 6750's access_token parameter) is refused rather than ignored, even beside a valid header.
 */
const sentMoreThanOnce = (request: FastifyRequest) =>
  authorizationFields(request.raw.rawHeaders) > 1 || (request.query as Record<string, unknown>).access_token !== undefined

/** The 401 and its challenge; invalid_token only when one bearer token was sent and it is not valid. */
function refusal (reply: FastifyReply, tokenRejected: boolean) {
  reply.header('www-authenticate', tokenRejected ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE)
  return new UnauthorizedError()
}

// Who the host's `authenticate` said each request is from.
const hostIdentities = new WeakMap<FastifyRequest, string>()

/** The key a request is counted under: what the host's auth identified, else a digest of its token. */
export function identityOf (request: FastifyRequest): string {
  const identity = hostIdentities.get(request)
  if (identity !== undefined) return identity
  // After the scheme name, whatever its case; a digest, never the token itself.
  const authorization = request.headers.authorization!
  return tokenDigest(authorization.slice(authorization.indexOf(' ') + 1).trim()).toString('base64')
}

/**
 * Refused credentials counted per client address (an IPv6 /64): past the limit, a refused one is
 * answered 429 until the window ends, which tells a client that keeps failing to stop. A
 * credential that verifies always passes, whoever failed from its address (clients behind one
 * proxy or NAT share it): a token of 16 random characters is out of reach of guessing at any
 * speed, so a right guess has nothing to hide. The 429 for a refused request, or undefined (401).
 */
function failureThrottle (limit: WindowLimit | false) {
  if (limit === false) return () => undefined
  const counter = new WindowCounter(limit.timeWindow, undefined, limit.max)
  return (request: FastifyRequest, reply: FastifyReply) => {
    const window = counter.hit(addressKey(request.ip))
    if (window.count <= limit.max) return undefined
    reply.header('retry-after', secondsLeft(window))
    return new AuthThrottledError()
  }
}

type Throttle = ReturnType<typeof failureThrottle>

/** The host decides who a request is from; the plugin refuses it with 401 when that is no one. */
function hostAuthentication (fastify: FastifyInstance, authenticate: Authenticate, throttle: Throttle) {
  fastify.addHook('onRequest', async (request, reply) => {
    // Whatever it throws is the host's own error, for the host's error handler.
    const identity = await authenticate(request, reply)
    if (reply.sent) return reply
    if (typeof identity === 'string' && identity !== '') {
      hostIdentities.set(request, identity)
      markVerified(request)
      return
    }
    if (identity !== false && identity !== null && identity !== undefined) {
      throw new TypeError(`plant-store: option authenticate returned ${typeof identity}: it must return a non-empty string naming who the request is from, or false`)
    }
    throw throttle(request, reply) ?? new UnauthenticatedError()
  })
}

/**
 * RFC 6750 bearer authentication for the routes of the registering scope, or the host's own
 * (`authenticate`). Every refusal is a 401 in the Error shape (with a WWW-Authenticate challenge
 * for a token), logged at debug by the error handler; failures are limited per client address.
 * A request whose credential verified says so to the hooks after auth's (`hasVerifiedToken`).
 */
export default fp<AuthOptions>(async function auth (fastify, { tokens, authenticate, failureLimit }) {
  const throttle = failureThrottle(failureLimit)
  declareVerifiedToken(fastify)
  if (authenticate !== undefined) return hostAuthentication(fastify, authenticate, throttle)
  await fastify.register(bearerAuth, {
    keys: [],
    auth: tokenChecker(tokens!),
    addHook: false,
    // The scheme name is case-insensitive in HTTP.
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: null as unknown as undefined
  })
  const verify = fastify.verifyBearerAuth!
  fastify.addHook('onRequest', (request, reply, done) => {
    // No header at all, the commonest refusal, is answered before bearer-auth, whose own error for
    // it captures a stack trace that costs more than the rest of the refusal.
    if (request.headers.authorization === undefined || sentMoreThanOnce(request)) return done(refusal(reply, false))
    verify(request, reply, (error) => {
      if (!error) {
        markVerified(request)
        return done()
      }
      // Only a token checked and refused is a guess: one refused unchecked (another scheme, a
      // second credential) told its sender nothing, and is not counted.
      if (!BEARER_TOKEN_SENT.test(request.headers.authorization!)) return done(refusal(reply, false))
      done(throttle(request, reply) ?? refusal(reply, true))
    })
  })
  // Trailers come after the body, once the header was checked: an Authorization field there
  // (which RFC 9110 forbids in trailers) is a second credential all the same.
  fastify.addHook('preValidation', (request, reply, done) => {
    // inject()'s requests have no trailers at all.
    const trailers: string[] | undefined = request.raw.rawTrailers
    if (trailers === undefined || trailers.length === 0 || authorizationFields(trailers) === 0) return done()
    done(refusal(reply, false))
  })
}, { name: 'plant-store-auth' })
