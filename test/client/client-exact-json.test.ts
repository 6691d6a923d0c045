import { deepStrictEqual, equal } from 'node:assert/strict'
import fc from 'fast-check'
import t from 'tap'
import { parseExactJson, stringifyExactJson } from '../../schemas/exact-json.js'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const PAST_DOUBLES = 2n ** 53n + 1n

/** JSON.parse's reading of a value: integers as the numbers JSON.parse makes of them. */
const asJsonParseWould = (value: unknown): unknown => {
  if (typeof value === 'bigint') return Number(value)
  if (Array.isArray(value)) return value.map(asJsonParseWould)
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, asJsonParseWould(member)]))
  }
  return value
}

t.test('integer literals are exact bigints over the whole int64 range and past it', async (t) => {
  for (const id of [INT64_MIN, INT64_MAX, PAST_DOUBLES, -PAST_DOUBLES, 0n, 2n ** 64n, INT64_MIN - 1n]) {
    t.equal(parseExactJson(String(id)), id, `${id}`)
    t.strictSame(parseExactJson(`[{"id":${id},"name":"n"}]`), [{ id, name: 'n' }], `${id} in a list`)
  }
  t.equal(parseExactJson('-0'), 0n)
  t.not(Number(parseExactJson('9007199254740993')), 9007199254740993n, 'the neighbour JSON.parse would give is not it')
})

t.test('numbers with a fraction or an exponent are numbers, as JSON.parse reads them', async (t) => {
  t.strictSame(parseExactJson('[1.5, -0.25, 1e3, 2E-2, 1.0, 9007199254740993.0]'), [1.5, -0.25, 1000, 0.02, 1, 9007199254740992])
})

t.test('strings that hold digits or "id": are never altered', async (t) => {
  const strings = [
    '9007199254740993', '"id":9007199254740993', '{"id":9223372036854775807}', 'id: 12345678901234567890',
    '\\"id\\":1', '1e400', '\u0000 \ud800 \u2028', 'tab\there', '"quoted"', '', '[]{},:'
  ]
  for (const [index, text] of strings.entries()) {
    const json = JSON.stringify({ id: 1, name: text, tag: text })
    // Labelled by index: U+2028 in a label would break TAP's lines.
    t.strictSame(parseExactJson(json), { id: 1n, name: text, tag: text }, `string ${index} read`)
    t.equal(stringifyExactJson({ id: 1n, name: text }), JSON.stringify({ id: 1, name: text }), `string ${index} written`)
  }
  t.equal(parseExactJson('"\\u0041\\n\\/\\\\\\"\\ud83c\\udf3f"'), 'A\n/\\"🌿', 'every escape')
  t.equal(parseExactJson('"🌿 Monstera déliciosa"'), '🌿 Monstera déliciosa', 'UTF-16 beyond ASCII as it is')
})

// Integers JSON.stringify writes with more than 20 digits and sign (up to 1e21) are refused: see client-cut-answers.
const hasLongInteger = (value: unknown): boolean => typeof value === 'number'
  ? Number.isInteger(value) && JSON.stringify(value).length > 20
  : typeof value === 'object' && value !== null && Object.values(value).some(hasLongInteger)

t.test('any JSON document reads as JSON.parse reads it, but for exact integers', async (t) => {
  fc.assert(fc.property(fc.jsonValue().filter((value) => !hasLongInteger(value)), (value) => {
    const text = JSON.stringify(value, null, Math.random() < 0.5 ? 2 : undefined)
    deepStrictEqual(asJsonParseWould(parseExactJson(text)), JSON.parse(text))
  }), { numRuns: 500 })
  t.pass('500 random documents') // fc.assert throws the smallest counterexample
})

t.test('any int64 id in any list survives parse and stringify exactly', async (t) => {
  const plant = fc.record({ id: fc.bigInt(INT64_MIN, INT64_MAX), name: fc.string(), tag: fc.option(fc.string(), { nil: undefined }) })
  fc.assert(fc.property(fc.array(plant, { maxLength: 5 }), (plants) => {
    const text = stringifyExactJson(plants)
    const expected = plants.map(({ id, name, tag }) => tag === undefined ? { id, name } : { id, name, tag })
    deepStrictEqual(parseExactJson(text), expected)
    equal(stringifyExactJson(parseExactJson(text)), text, 'written back as it was read')
  }), { numRuns: 500 })
  t.pass('500 random lists')
})

t.test('an object key "__proto__" is an own property, as JSON.parse makes it, and sets no prototype', async (t) => {
  const value = parseExactJson('{"__proto__":{"polluted":1},"a":1}') as Record<string, unknown>
  t.equal(Object.getPrototypeOf(value), Object.prototype)
  t.strictSame(Object.keys(value), ['__proto__', 'a'])
  t.equal((value as { polluted?: unknown }).polluted, undefined)
  t.equal(({} as { polluted?: unknown }).polluted, undefined)
})

t.test('a repeated key keeps the last value, as JSON.parse does', async (t) => {
  t.strictSame(parseExactJson('{"id":1,"id":2}'), { id: 2n })
})

t.test('text that is not JSON is a SyntaxError, as JSON.parse makes it', async (t) => {
  const invalid = [
    '', ' ', '{', '[', '[1,]', '{"a":1,}', '{"a" 1}', '{a:1}', '[1 2]', '01', '-', '1.', '.5', '+1', '1e', 'nul', 'True',
    '"unterminated', '"\\x41"', '"\\u12"', '"a\u0001b"', "'single'", '{"a":1}}', '[]x', 'NaN', '<html>Bad Gateway</html>'
  ]
  for (const text of invalid) {
    t.throws(() => JSON.parse(text), SyntaxError, `JSON.parse refuses ${JSON.stringify(text)} too`)
    t.throws(() => parseExactJson(text), SyntaxError, JSON.stringify(text))
  }
  t.throws(() => parseExactJson('[1,'), { name: 'SyntaxError', message: 'Unexpected end of JSON input' })
  t.throws(() => parseExactJson('{"a":1]'), { name: 'SyntaxError', message: 'Unexpected "]" in JSON at position 6' })
})

t.test('whitespace JSON allows is allowed anywhere between tokens', async (t) => {
  t.strictSame(parseExactJson(' \t\n\r{ "a" : [ 1 , true , false , null , { } , [ ] ] } \n'), { a: [1n, true, false, null, {}, []] })
})

t.test('stringify writes bigints as exact JSON integers and everything else as JSON.stringify does', async (t) => {
  t.equal(stringifyExactJson({ id: INT64_MIN, name: 'a' }), '{"id":-9223372036854775808,"name":"a"}')
  t.equal(stringifyExactJson([INT64_MAX, PAST_DOUBLES]), '[9223372036854775807,9007199254740993]')
  const awkward = {
    skipped: undefined,
    fn: () => {},
    symbol: Symbol('s'),
    list: [undefined, () => {}, Symbol('s'), 1, 'x', null, true],
    date: new Date(0),
    nested: { toJSON: () => ({ id: 5n }) },
    number: 1.5
  }
  t.equal(stringifyExactJson(awkward),
    '{"list":[null,null,null,1,"x",null,true],"date":"1970-01-01T00:00:00.000Z","nested":{"id":5},"number":1.5}')
  const { nested, ...rest } = awkward
  t.equal(stringifyExactJson(rest), JSON.stringify(rest), 'the same text as JSON.stringify without bigints')
  t.ok(nested)
})
