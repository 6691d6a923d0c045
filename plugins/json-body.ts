import { isUtf8 } from 'node:buffer'
import fp from 'fastify-plugin'
import { LosslessNumber, parse as parseLossless } from 'lossless-json'
import secureJson from 'secure-json-parse'
import { EmptyBodyError, ForbiddenKeyError, InvalidJsonError, InvalidUtf8Error } from './http-errors.js'

// Fastify's own protection against prototype poisoning, applied to both parse paths.
const POISON_CHECK = { protoAction: 'error', constructorAction: 'error' } as const

// JSON.parse rounds integers past 2^53, and a fraction or exponent can spell an integer a double
// cannot hold ("9223372036854775807.0"): bodies with any of those take the lossless path. The
// common body ({"id":12,"name":"x"}) has neither and keeps the fast native parser.
const NEEDS_LOSSLESS_PARSE = /\d{16}|\d[.eE]/

const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// More digits than this is outside int64 whatever the spelling; the limit keeps 1e999999 cheap.
const MAX_INTEGER_DIGITS = 20

/** The exact integer a JSON number literal spells ("1.0", "1e3", "-0" included), if it is one. */
export function exactInteger (literal: string): bigint | undefined {
  const [, sign, whole, fraction = '', exponent = '0'] = JSON_NUMBER.exec(literal) ?? []
  if (whole === undefined) return undefined
  let digits = (whole + fraction).replace(/^0+/, '')
  const scale = Number(exponent) - fraction.length
  if (scale < 0) {
    const dropped = digits.slice(Math.max(0, digits.length + scale))
    if (/[1-9]/.test(dropped)) return undefined
    digits = digits.slice(0, Math.max(0, digits.length + scale))
  } else if (digits !== '') {
    if (digits.length + scale > MAX_INTEGER_DIGITS) return undefined
    digits += '0'.repeat(scale)
  }
  return BigInt(sign + (digits || '0'))
}

// Integers become BigInt; anything else stays a LosslessNumber, which no schema of ours accepts.
const parseNumberExactly = (literal: string) => exactInteger(literal) ?? new LosslessNumber(literal)

/**
 * Parses a JSON body keeping every integer exact. Note: the lossless path refuses a key repeated
 * with different values, which the native path accepts (last one wins).
 */
export function parseJsonBody (body: Buffer): unknown {
  if (body.length === 0) throw new EmptyBodyError()
  if (!isUtf8(body)) throw new InvalidUtf8Error()
  const text = body.toString('utf8')
  let value: unknown
  try {
    value = NEEDS_LOSSLESS_PARSE.test(text) ? parseLossless(text, null, parseNumberExactly) : JSON.parse(text)
  } catch {
    throw new InvalidJsonError()
  }
  if (typeof value === 'object' && value !== null) {
    try {
      secureJson.scan(value, POISON_CHECK)
    } catch {
      throw new ForbiddenKeyError()
    }
  }
  return value
}

/** Replaces every body parser in the registering scope: JSON only, anything else is 415. */
export default fp(async function jsonBody (fastify) {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}, { name: 'plant-store-json-body' })
