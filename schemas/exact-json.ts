// JSON.parse rounds every integer past 2^53 through a double, and on Node 20 a reviver cannot
// see a number's source text. This parser reads integer literals as exact BigInts instead; the
// rest is JSON as JSON.parse reads it. No dependency: the client runs wherever `fetch` does.

const WHITESPACE = /[ \t\n\r]*/y
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y
// The longest int64 as JSON writes it: -9223372036854775808.
export const MAX_INTEGER_LENGTH = 20
const LITERALS = new Map<string, unknown>([['true', true], ['false', false], ['null', null]])

/**
 * Parses JSON text as JSON.parse does, except that an integer literal (no fraction, no exponent)
 * becomes an exact `bigint`. Throws a SyntaxError on text that is not JSON, and a RangeError at
 * once on an integer literal longer than 20 characters (outside int64 whatever its digits).
 */
export function parseExactJson (text: string): unknown {
  let position = 0

  const fail = (): never => {
    throw new SyntaxError(position < text.length
      ? `Unexpected ${JSON.stringify(text[position])} in JSON at position ${position}`
      : 'Unexpected end of JSON input')
  }

  const skipWhitespace = () => {
    WHITESPACE.lastIndex = position
    WHITESPACE.test(text)
    position = WHITESPACE.lastIndex
  }

  const token = (pattern: RegExp) => {
    pattern.lastIndex = position
    const match = pattern.exec(text) ?? fail()
    position = pattern.lastIndex
    return match
  }

  const expect = (character: string) => {
    skipWhitespace()
    if (text[position] !== character) fail()
    position++
  }

  // After the opening bracket: true when the closing one follows (an empty array or object).
  const closes = (character: string) => {
    skipWhitespace()
    if (text[position] !== character) return false
    position++
    return true
  }

  // After an item: true when another one follows, false at the closing bracket.
  const continues = (closing: string) => {
    skipWhitespace()
    const next = text[position++]
    if (next === ',') return true
    if (next !== closing) {
      position--
      fail()
    }
    return false
  }

  // A string token ends at the first quote after an even number of backslashes; JSON.parse then
  // checks and decodes it, as it would in a whole document. No regex: one with an alternation per
  // character overflows the stack on a string of millions of them.
  const parseString = () => {
    if (text[position] !== '"') fail()
    const start = position
    let end = text.indexOf('"', start + 1)
    for (; end !== -1; end = text.indexOf('"', end + 1)) {
      let backslashes = 0
      while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++
      if (backslashes % 2 === 0) break
    }
    if (end === -1) {
      position = text.length
      fail()
    }
    try {
      const value = JSON.parse(text.slice(start, end + 1)) as string
      position = end + 1
      return value
    } catch {
      return fail()
    }
  }

  const parseNumber = () => {
    const start = position
    const [literal, fraction, exponent] = token(NUMBER)
    if (fraction !== undefined || exponent !== undefined) return Number(literal)
    // BigInt takes time quadratic in the digits (seconds for millions of them); no id is longer.
    if (literal.length > MAX_INTEGER_LENGTH) {
      throw new RangeError(`Integer of ${literal.length} characters in JSON at position ${start}: longer than any int64 (${MAX_INTEGER_LENGTH})`)
    }
    return BigInt(literal)
  }

  const parseArray = () => {
    const items: unknown[] = []
    if (closes(']')) return items
    do items.push(parseValue())
    while (continues(']'))
    return items
  }

  const parseObject = () => {
    const object: Record<string, unknown> = {}
    if (closes('}')) return object
    do {
      skipWhitespace()
      const key = parseString()
      expect(':')
      // An own property, as JSON.parse makes it: assigning `__proto__` would set the prototype.
      Object.defineProperty(object, key, { value: parseValue(), enumerable: true, writable: true, configurable: true })
    } while (continues('}'))
    return object
  }

  const parseValue = (): unknown => {
    skipWhitespace()
    const first = text[position]
    if (first === '"') return parseString()
    if (first === '[') {
      position++
      return parseArray()
    }
    if (first === '{') {
      position++
      return parseObject()
    }
    if (first === '-' || (first >= '0' && first <= '9')) return parseNumber()
    for (const [word, value] of LITERALS) {
      if (text.startsWith(word, position)) {
        position += word.length
        return value
      }
    }
    return fail()
  }

  const value = parseValue()
  skipWhitespace()
  if (position < text.length) fail()
  return value
}

/**
 * Writes a value as JSON text as JSON.stringify does, except that a `bigint` is written as the
 * exact JSON integer it is (JSON.stringify throws on one).
 */
export function stringifyExactJson (value: unknown): string {
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) {
    return `[${value.map((item) => isOmitted(item) ? 'null' : stringifyExactJson(item)).join(',')}]`
  }
  if (typeof value === 'object' && value !== null) {
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
      return stringifyExactJson((value as { toJSON: () => unknown }).toJSON())
    }
    const members = Object.entries(value)
      .filter(([, member]) => !isOmitted(member))
      .map(([key, member]) => `${JSON.stringify(key)}:${stringifyExactJson(member)}`)
    return `{${members.join(',')}}`
  }
  return JSON.stringify(value)
}

// What JSON.stringify leaves out of an object (and writes as null in an array).
const isOmitted = (value: unknown) =>
  value === undefined || typeof value === 'function' || typeof value === 'symbol'
