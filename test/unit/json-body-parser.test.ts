import assert from 'node:assert/strict'
import fc from 'fast-check'
import { parse as parseLossless } from 'lossless-json'
import secureJson from 'secure-json-parse'
import t from 'tap'
import { exactInteger, InexactNumber, parseAnyJson, parseJsonBody, parsePlantBody } from '../../plugins/http/json-body.js'

// The body parser as functions, without Fastify; test/plugin/json-body.test.ts sends bodies to the routes.
const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 300)

t.test('exactInteger reads every spelling of an integer exactly', async (t) => {
  const cases: Array<[string, bigint | undefined]> = [
    ['0', 0n], ['-0', 0n], ['42', 42n], ['-42', -42n], ['1.0', 1n], ['1.50', undefined], ['1e3', 1000n],
    ['1E-0', 1n], ['2.5e1', 25n], ['25e-1', undefined], ['2500e-2', 25n], ['0.0e-99999', 0n],
    ['9223372036854775807', 9223372036854775807n], ['9223372036854775808', 9223372036854775808n],
    ['123456789012345678901', undefined], ['1e19', 10000000000000000000n], ['1e20', undefined],
    ['1e999999999999', undefined], ['1e-999999999999', undefined], ['0e999999999999', 0n], ['abc', undefined]
  ]
  for (const [literal, expected] of cases) t.equal(exactInteger(literal), expected, literal)
})

t.test('parseJsonBody keeps long integers exact and reads short ones as numbers', async (t) => {
  t.same(parseJsonBody(Buffer.from('{"id":12,"name":"x"}')), { id: 12, name: 'x' })
  t.same(parseJsonBody(Buffer.from('{"id":9007199254740993,"name":"x"}')), { id: 9007199254740993n, name: 'x' })
  const fraction = parseJsonBody(Buffer.from('{"id":1.5}')) as { id: unknown }
  t.not(typeof fraction.id, 'bigint', 'a fraction is never an integer')
  t.same(parseJsonBody(Buffer.from('[1, "a", null]')), [1, 'a', null])
  t.equal(parseJsonBody(Buffer.from('7')), 7)
  t.equal(parseJsonBody(Buffer.from('12345678901234567890')), 12345678901234567890n, 'a top-level long number')
  t.same(parseJsonBody(Buffer.from('{"a":[1,{"b":[9007199254740993,"12345678901234567",2.0]}],"10":1e19,"2":-0.0}')),
    { a: [1, { b: [9007199254740993n, '12345678901234567', 2n] }], 10: 10n ** 19n, 2: 0n }, 'exact at any depth, whatever the key order')
})

// The exact reading of a body, by a different parser: lossless-json, every number from its literal.
function oracle (text: string): unknown {
  const value = parseLossless(text, null, (literal) => exactInteger(literal) ?? { inexact: literal })
  if (typeof value === 'object' && value !== null) secureJson.scan(value, { protoAction: 'error', constructorAction: 'error' })
  return normalize(value)
}
// Both readings in one form: every integer a BigInt, any other number by its literal.
function normalize (value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : { inexact: String(value) }
  if (Array.isArray(value)) return value.map(normalize)
  if (value instanceof InexactNumber) return { inexact: value.literal }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, normalize(item)]))
  }
  return value
}

const longNumber = fc.oneof(
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
  fc.tuple(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n }), fc.constantFrom('.0', '.00', 'e0', '0e-1', '.5', 'e2', 'E-1', '.0000000000000000001')).map(([n, tail]) => `${n}${tail}`)
)
// Any JSON, with long and oddly spelled numbers put in place of some of its numbers.
const jsonWithLongNumbers = fc.tuple(fc.json({ depthSize: 'small' }), fc.array(longNumber, { minLength: 1, maxLength: 8 }))
  .map(([text, numbers]) => { let n = 0; return text.replace(/-?\d+(\.\d+)?([eE][+-]?\d+)?(?=[,\]}]|$)/g, (literal) => numbers[n++ % numbers.length] ?? literal) })

t.test('any JSON reads as a lossless parser reads it, integers exact at every depth', async (t) => {
  fc.assert(fc.property(jsonWithLongNumbers, (text) => {
    let expected: unknown
    try {
      expected = oracle(text)
    } catch {
      assert.throws(() => parseJsonBody(Buffer.from(text)))
      return
    }
    assert.deepStrictEqual(normalize(parseJsonBody(Buffer.from(text))), expected)
  }), { numRuns: FUZZ_RUNS })
  t.pass(`${FUZZ_RUNS} bodies read alike`)
})

const whitespace = fc.stringMatching(/^[ \t\n\r]{0,3}$/)
// Plant bodies in the usual order with any spacing, names and tags of any text (quotes, escapes,
// control characters), and ids of any size or spelling: the usual ones and some near misses.
const usualPlantBody = fc.record({
  id: fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String), fc.constantFrom('-0', '0', '01', '-', '1.0', '1e3', '99999999999999999999999')),
  name: fc.string({ unit: 'binary' }),
  tag: fc.option(fc.string({ unit: 'binary' }), { nil: undefined }),
  spaces: fc.array(whitespace, { minLength: 16, maxLength: 16 }),
  raw: fc.boolean(),
  // A PUT's body has no id.
  withId: fc.boolean()
}).map(({ id, name, tag, spaces: w, raw, withId }) => {
  // Raw: the text put between quotes as it is, which is not always valid JSON.
  const string = (text: string) => raw ? `"${text}"` : JSON.stringify(text)
  const tagMember = tag === undefined ? '' : `,${w[8]}"tag"${w[9]}:${w[10]}${string(tag)}${w[11]}`
  const idMember = withId ? `"id"${w[2]}:${w[3]}${id}${w[4]},${w[5]}` : ''
  return `${w[0]}{${w[1]}${idMember}"name"${w[6]}:${w[7]}${string(name)}${tagMember}}${w[12]}`
})

t.test('fuzz: the usual plant body reads by its regular expression exactly as by the general path', async (t) => {
  let usual = 0
  fc.assert(fc.property(usualPlantBody, (text) => {
    const fast = parsePlantBody(text)
    if (fast === undefined) return
    usual++
    assert.deepStrictEqual(fast, parseAnyJson(text))
  }), { numRuns: FUZZ_RUNS })
  t.ok(usual > FUZZ_RUNS / 4, `${usual} of ${FUZZ_RUNS} bodies read both ways alike`)
  t.equal(parsePlantBody('{"id":1,"name":"a\\"b"}'), undefined, 'an escape takes the general path')
  t.equal(parsePlantBody('{"name":"n","id":1}'), undefined, 'another order takes the general path')
  t.strictSame(parsePlantBody('{"name":"n","tag":"t"}'), { name: 'n', tag: 't' }, 'a PUT\'s body, without an id, takes the usual path')
  t.equal(parsePlantBody('{"id":1,"name":"n"}\u00a0'), undefined, 'only JSON\'s whitespace')
})
