import { isUtf8 } from 'node:buffer'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import secureJson from 'secure-json-parse'
import {
  EmptyBodyError, EncodedBodyError, ForbiddenKeyError, InvalidJsonError, InvalidUtf8Error, MAX_JSON_DEPTH, RepeatedKeyError,
  TooDeepError, UnsupportedCharsetError
} from './errors.js'

// Fastify's own protection against prototype poisoning.
const POISON_CHECK = { protoAction: 'error', constructorAction: 'error' } as const

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

/** A number that is no integer, kept as written: no schema of ours accepts it, nor rounds it into one. */
export class InexactNumber {
  constructor (readonly literal: string) {}
}

/** A number literal a double may not hold exactly, read exactly, and where it sits: member `key` of container `container`. */
interface LongNumber { container: number, key: string | number, value: bigint | InexactNumber }

/** The exact value of a number literal that needs one: `plain` when it is digits with an optional minus. */
function readLongNumber (literal: string, digits: number, plain: boolean): bigint | InexactNumber {
  // A plain integer (the common 64-bit id) is read at once; other spellings by exactInteger.
  return (plain && digits <= MAX_INTEGER_DIGITS ? BigInt(literal) : exactInteger(literal)) ?? new InexactNumber(literal)
}

/** What one pass over a JSON text finds besides its values. */
interface Shape {
  /** For each object or array, in the order they open: the index of the one it sits in (-1: none)… */
  parents: number[]
  /** …and its key or index there. */
  keys: Array<string | number>
  /** The numbers to read from their literal rather than from JSON.parse's double. */
  longNumbers: LongNumber[]
  repeatedKey: boolean
}

/** An object or array open at this point of the text. */
interface Open { index: number, key: string | number, isObject: boolean, expectKey: boolean, seen: Keys }

/** The keys of one object so far: a list while short, a Set once long (a huge object stays linear). */
class Keys {
  private list: string[] = []
  private set: Set<string> | undefined

  has (key: string): boolean {
    return this.set === undefined ? this.list.includes(key) : this.set.has(key)
  }

  add (key: string): void {
    if (this.set !== undefined) this.set.add(key)
    else if (this.list.push(key) > 16) this.set = new Set(this.list)
  }
}

/** The index of the quote that ends the string opening at `start` (the text is valid JSON: there is one). */
function endOfString (text: string, start: number): number {
  let i = start + 1
  for (let code = text.charCodeAt(i); code !== QUOTE; code = text.charCodeAt(++i)) {
    if (code === BACKSLASH) i++
  }
  return i
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
// Up to 15 digits, an integer literal is exactly the double JSON.parse reads.
const MAX_SHORT_DIGITS = 15

function isNumberPart (code: number): boolean {
  return (code >= ZERO && code <= NINE) || code === 0x2e || code === 0x65 || code === 0x45 || code === 0x2b || code === MINUS
}

/**
 * Walks a JSON text once for what JSON.parse does not tell: the keys repeated within one object,
 * and the numbers that need their literal (a fraction, an exponent, or more than 15 digits), with
 * their places. It reads only text JSON.parse has accepted.
 */
function scanShape (text: string): Shape {
  const shape: Shape = { parents: [], keys: [], longNumbers: [], repeatedKey: false }
  const stack: Open[] = []
  let open: Open | undefined
  // Strings end at the first quote unless a backslash comes before it: most bodies have none.
  let nextBackslash = text.indexOf('\\')
  if (nextBackslash === -1) nextBackslash = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === QUOTE) {
      const start = i
      i = text.indexOf('"', start + 1) // valid JSON: a string always ends
      const escaped = i > nextBackslash
      if (escaped) i = endOfString(text, start)
      if (open?.expectKey) {
        const key = escaped ? decodeKey(text.slice(start, i + 1)) : text.slice(start + 1, i)
        if (open.seen.has(key)) shape.repeatedKey = true
        open.seen.add(key)
        open.key = key
        open.expectKey = false
      }
      if (escaped) {
        nextBackslash = text.indexOf('\\', i)
        if (nextBackslash === -1) nextBackslash = text.length
      }
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      shape.parents.push(open?.index ?? -1)
      shape.keys.push(open?.key ?? -1)
      const isObject = code === OPEN_OBJECT
      open = { index: shape.parents.length - 1, key: isObject ? '' : 0, isObject, expectKey: isObject, seen: new Keys() }
      stack.push(open)
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      stack.pop()
      open = stack.at(-1)
    } else if (code === COMMA) {
      if (open?.isObject) open.expectKey = true
      else if (open !== undefined) open.key = (open.key as number) + 1
    } else if (code === MINUS || (code >= ZERO && code <= NINE)) {
      const start = i
      let digits = 0
      let plain = true
      if (code === MINUS) i++
      for (; i < text.length && isNumberPart(text.charCodeAt(i)); i++) {
        const c = text.charCodeAt(i)
        if (c >= ZERO && c <= NINE) digits++
        else plain = false
      }
      if (!plain || digits > MAX_SHORT_DIGITS) {
        const value = readLongNumber(text.slice(start, i), digits, plain)
        shape.longNumbers.push({ container: open?.index ?? -1, key: open?.key ?? -1, value })
      }
      i--
    }
  }
  return shape
}

/** The index of the quote that ends the string opening at `start` in any text, or the text's length. */
function endOfAnyString (text: string, start: number): number {
  for (let i = text.indexOf('"', start + 1); i !== -1; i = text.indexOf('"', i + 1)) {
    // A quote ends the string unless an odd number of backslashes comes before it.
    let backslashes = 0
    while (text.charCodeAt(i - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return i
  }
  return text.length
}

/**
 * Whether a text, valid JSON or not, opens more than `max` arrays and objects within one another.
 * It stops at the first level too many, so a deep body costs no more than its first brackets.
 */
export function nestsDeeperThan (text: string, max: number): boolean {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === QUOTE) i = endOfAnyString(text, i)
    else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      if (++depth > max) return true
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) depth--
  }
  return false
}

// A key with escapes ("\u0069d" is "id"), from a text JSON.parse has read already.
const decodeKey = (quoted: string) => JSON.parse(quoted) as string

/** Puts each long number, read exactly from its literal, in the place JSON.parse's double took. */
function readLongNumbers (value: unknown, { parents, keys, longNumbers }: Shape): unknown {
  const containers: Array<Record<string | number, unknown>> = []
  const containerAt = (index: number) => {
    // The chain up to the nearest container already found, then down from it.
    const chain: number[] = []
    for (let at = index; at !== -1 && containers[at] === undefined; at = parents[at]) chain.push(at)
    for (const at of chain.reverse()) {
      containers[at] = (parents[at] === -1 ? value : containers[parents[at]][keys[at]]) as Record<string | number, unknown>
    }
    return containers[index]
  }
  for (const { container, key, value: number } of longNumbers) {
    if (container === -1) return number
    containerAt(container)[key] = number
  }
  return value
}

// JSON's whitespace, and a string without escapes or control characters (its text is its value).
const _ = '[ \\t\\n\\r]*'
const PLAIN_STRING = '"([^"\\\\\\x00-\\x1f]*)"'
/** The body nearly every client sends: {"id":<integer>,"name":"…"} with "tag":"…" or not, in this order (a PUT's without the id). */
const PLANT_BODY = new RegExp(
  `^${_}\\{${_}(?:"id"${_}:${_}(-?(?:0|[1-9]\\d*))${_},${_})?"name"${_}:${_}${PLAIN_STRING}${_}` +
  `(?:,${_}"tag"${_}:${_}${PLAIN_STRING}${_})?\\}${_}$`)

/** A plant body in its usual form, read by one regular expression as the general path reads it. */
export function parsePlantBody (text: string): object | undefined {
  const match = PLANT_BODY.exec(text)
  if (match === null) return undefined
  const [, id, name, tag] = match
  const plant: Record<string, unknown> = {}
  if (id !== undefined) {
    const digits = id.startsWith('-') ? id.length - 1 : id.length
    plant.id = digits > MAX_SHORT_DIGITS ? readLongNumber(id, digits, true) : Number(id)
  }
  plant.name = name
  if (tag !== undefined) plant.tag = tag
  return plant
}

/**
 * Parses a JSON body with JSON.parse, keeping every integer exact (ids of 64 bits included) and
 * refusing a key repeated within one object or nesting deeper than MAX_JSON_DEPTH, whichever numbers the body holds. The usual plant
 * body skips all that: it holds none of what they guard against.
 */
export function parseJsonBody (body: Buffer): unknown {
  if (body.length === 0) throw new EmptyBodyError()
  if (!isUtf8(body)) throw new InvalidUtf8Error()
  const text = body.toString('utf8')
  return parsePlantBody(text) ?? parseAnyJson(text)
}

/** Any JSON text, read as parseJsonBody says. */
export function parseAnyJson (text: string): unknown {
  // Before JSON.parse: its work, and the scan's below, grow with the depth.
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new TooDeepError()
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new InvalidJsonError()
  }
  const shape = scanShape(text)
  // Parsers disagree on a repeated key (the first, the last, an error): refused, none can be fooled.
  if (shape.repeatedKey) throw new RepeatedKeyError()
  if (typeof value === 'object' && value !== null) {
    try {
      secureJson.scan(value, POISON_CHECK)
    } catch {
      throw new ForbiddenKeyError()
    }
  }
  return shape.longNumbers.length === 0 ? value : readLongNumbers(value, shape)
}

const CHARSET = /;\s*charset=("[^"]*"|[^;\s]*)/gi
const UTF8 = /^"?utf-?8"?$/i

/** A body as sent: UTF-8 (JSON's only encoding) and not compressed, which this service does not undo. */
function checkEncoding (request: FastifyRequest): void {
  if (request.headers['content-encoding'] !== undefined) throw new EncodedBodyError()
  const type = request.headers['content-type']!
  // Most clients send no parameter at all.
  if (!type.includes(';')) return
  for (const [, charset] of type.matchAll(CHARSET)) {
    if (!UTF8.test(charset)) throw new UnsupportedCharsetError()
  }
}

/** Replaces every body parser in the registering scope: JSON only, anything else is 415. */
export default fp(async function jsonBody (fastify) {
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      checkEncoding(request)
      done(null, parseJsonBody(body as Buffer))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}, { name: 'plant-store-json-body' })
