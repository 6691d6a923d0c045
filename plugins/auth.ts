import { createHash, timingSafeEqual } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { UnauthorizedError } from './http-errors.js'

export interface AuthOptions {
  /** The accepted bearer tokens. */
  tokens: readonly string[]
}

const CHALLENGE = 'Bearer realm="plant-store"'
const BEARER_TOKEN_SENT = /^bearer +\S/i

/** A fixed-length digest of a token: compared in constant time, and safe to use as a key. */
export const tokenDigest = (token: string) => createHash('sha256').update(token).digest()

/**
 * Compares fixed-length digests against every configured token, without stopping at a match:
 * the time taken tells neither the length of a token nor which one matched.
 */
export function tokenChecker (tokens: readonly string[]) {
  const digests = tokens.map(tokenDigest)
  return (presented: string): boolean => {
    const candidate = tokenDigest(presented)
    let matched = false
    for (const known of digests) matched = timingSafeEqual(candidate, known) || matched
    return matched
  }
}

// Node keeps only the first of repeated Authorization headers; a request carrying several is refused.
function hasRepeatedAuthorization (request: FastifyRequest): boolean {
  const raw = request.raw.rawHeaders
  let seen = 0
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 13 && raw[i].toLowerCase() === 'authorization') seen++
  }
  return seen > 1
}

/**
 * RFC 6750 bearer authentication for the routes of the registering scope. Every refusal is a 401
 * in the Error shape with a WWW-Authenticate challenge, logged at debug by the error handler.
 */
export default fp<AuthOptions>(async function auth (fastify, { tokens }) {
  await fastify.register(bearerAuth, {
    keys: [],
    auth: tokenChecker(tokens),
    addHook: false,
    // The scheme name is case-insensitive in HTTP.
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: null as unknown as undefined
  })
  const verify = fastify.verifyBearerAuth!
  fastify.addHook('onRequest', (request, reply, done) => {
    // invalid_token only when one bearer token was sent and it is not valid.
    const refuse = (tokenRejected: boolean) => {
      reply.header('www-authenticate', tokenRejected ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE)
      done(new UnauthorizedError())
    }
    // No header at all, the commonest refusal, is answered before bearer-auth, whose own error for
    // it captures a stack trace that costs more than the rest of the refusal.
    if (request.headers.authorization === undefined || hasRepeatedAuthorization(request)) return refuse(false)
    verify(request, reply, (error) => error
      ? refuse(BEARER_TOKEN_SENT.test(request.headers.authorization!))
      : done())
  })
}, { name: 'plant-store-auth' })
