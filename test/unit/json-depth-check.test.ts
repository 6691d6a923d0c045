import t from 'tap'
import { MAX_JSON_DEPTH } from '../../plugins/http/errors.js'
import { nestsDeeperThan, parseJsonBody } from '../../plugins/http/json-body.js'

// The depth check as a function, without Fastify; test/plugin/json-depth.test.ts sends deep bodies to the routes.
const TOO_DEEP = `Body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`
const OPEN_ARRAY = '['.charCodeAt(0)

/** The error `parse` throws, and how many times JSON.parse ran meanwhile. */
function parsesWhile (parse: () => unknown) {
  const jsonParse = JSON.parse
  let parses = 0
  JSON.parse = (...args: Parameters<typeof JSON.parse>) => { parses++; return jsonParse(...args) }
  try {
    parse()
    return { error: undefined, parses }
  } catch (error) {
    return { error, parses }
  } finally {
    JSON.parse = jsonParse
  }
}

t.test('a body nested too deep is refused before any parsing, however deep it is', async (t) => {
  // 1 MiB (the default BODY_LIMIT) of nested arrays.
  const half = 512 * 1024 - 1
  const { error, parses } = parsesWhile(() => parseJsonBody(Buffer.from('['.repeat(half) + ']'.repeat(half))))
  t.match(error, { statusCode: 400, message: TOO_DEEP })
  t.equal(parses, 0, 'JSON.parse never ran: its work, and the shape scan\'s, grow with the depth')
  const atTheLimit = parsesWhile(() => parseJsonBody(Buffer.from('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))))
  t.equal(atTheLimit.error, undefined, 'at the limit it is parsed')
  t.equal(atTheLimit.parses, 1, 'once')
})

t.test('the depth check stops at the first level too many: a deep body costs no more than its first brackets', async (t) => {
  let read = 0
  // A text of endless brackets that notes how far it was read (and stops a check that would never end).
  const endless = {
    length: Number.MAX_SAFE_INTEGER,
    charCodeAt (index: number) {
      read = Math.max(read, index + 1)
      if (read > 4 * MAX_JSON_DEPTH) throw new Error(`${read} characters read: the check did not stop`)
      return OPEN_ARRAY
    }
  }
  t.equal(nestsDeeperThan(endless as unknown as string, MAX_JSON_DEPTH), true)
  t.equal(read, MAX_JSON_DEPTH + 1, `${MAX_JSON_DEPTH + 1} characters read, of an endless text`)
  t.notOk(nestsDeeperThan('['.repeat(MAX_JSON_DEPTH), MAX_JSON_DEPTH), 'as deep as the limit is not deeper')
})

t.test('brackets inside strings do not count, escaped quotes included', async (t) => {
  const inString = JSON.stringify({ id: 1, name: '['.repeat(1000) + '\\"[' + '\\\\' })
  t.notOk(nestsDeeperThan(inString, 1))
  t.same(parseJsonBody(Buffer.from(inString)), JSON.parse(inString))
  t.ok(nestsDeeperThan('{"a":[[', 2), 'text that is not JSON is measured as well')
  t.notOk(nestsDeeperThan('["unterminated [[[', 1), 'an unterminated string ends the text')
})
