import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import fc from 'fast-check'
import t from 'tap'
import { buildPlugin, createPlant, storedPlants } from '../helpers/plugin-app.js'

const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 300)
const REPEATED_KEY = { error: 400, message: 'Body repeats a key within one object' }

t.test('a key repeated within one object is refused with 400, on every body, and nothing is stored', async (t) => {
  const { app, store } = await buildPlugin(t)
  const cases: Record<string, string> = {
    'the name twice, short id': '{"id":1,"name":"a","name":"b"}',
    'the name twice, long id': '{"id":12345678901234567,"name":"a","name":"b"}',
    'the name twice, id spelled 1.0': '{"id":1.0,"name":"a","name":"b"}',
    'the id twice, same value': '{"id":1,"id":1,"name":"a"}',
    'the id twice, long ids': '{"id":12345678901234567,"name":"a","id":12345678901234568}',
    'the id twice, one escaped': '{"id":2,"name":"a","\\u0069d":3}',
    'the name twice, both escaped': '{"id":1,"n\\u0061me":"a","\\u006eame":"b"}',
    'a repeated key in an ignored member': '{"id":1,"name":"a","extra":{"k":1,"k":1}}',
    'a repeated key deep in an array': '{"id":12345678901234567,"name":"a","extra":[[{"x":[{"k":1,"k":2}]}]]}',
    'an empty key twice': '{"id":1,"name":"a","":1,"":2}'
  }
  for (const [label, payload] of Object.entries(cases)) {
    const response = await createPlant(app, payload)
    t.equal(response.statusCode, 400, label)
    t.same(response.json(), REPEATED_KEY, label)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
  const same = await createPlant(app, '{"id":1,"name":"a","extra":{"id":2,"name":"b","extra":{"name":"c"}}}')
  t.equal(same.statusCode, 200, 'a key may appear once in each object')
  t.same(await storedPlants(store), [{ id: 1n, name: 'a' }])
})

// A plant body with one of its keys written again, anywhere, with any value; the id short or long.
const bodyWithRepeatedKey = fc.record({
  id: fc.oneof(fc.integer({ min: 0 }).map(String), fc.bigInt({ min: 2n ** 53n, max: 2n ** 63n - 1n }).map(String), fc.integer({ min: 0 }).map((n) => `${n}.0`)),
  repeated: fc.constantFrom('id', 'name', 'tag', 'extra'),
  value: fc.oneof(fc.constantFrom('1', '12345678901234567', '"x"', 'null', '{}', '[]', '1.0'), fc.json({ depthSize: 'small' })),
  at: fc.nat({ max: 4 }),
  escaped: fc.boolean()
}).map(({ id, repeated, value, at, escaped }) => {
  const members = [`"id":${id}`, '"name":"n"', '"tag":"t"', '"extra":{"a":[1]}']
  const key = escaped ? `"\\u00${repeated.charCodeAt(0).toString(16)}${repeated.slice(1)}"` : `"${repeated}"`
  members.splice(at, 0, `${key}:${value}`)
  return `{${members.join(',')}}`
})

t.test('fuzz: a repeated key is the same 400 whichever way the numbers of the body are read', async (t) => {
  const { app, store } = await buildPlugin(t)
  await fc.assert(fc.asyncProperty(bodyWithRepeatedKey, async (payload) => {
    const response = await createPlant(app, payload)
    assert.deepStrictEqual([response.statusCode, response.json()], [400, REPEATED_KEY])
  }), { numRuns: FUZZ_RUNS })
  t.pass(`${FUZZ_RUNS} bodies refused alike`)
  t.same(await storedPlants(store), [], 'nothing stored')
})

t.test('a charset other than UTF-8 is 415 in the Error shape; utf-8 in any spelling is fine', async (t) => {
  const { app, store } = await buildPlugin(t)
  const refused = ['application/json; charset=latin1', 'application/json; charset=ISO-8859-1', 'application/json;charset=utf-16',
    'application/json; charset="latin1"', 'application/json; charset=utf-8; charset=latin1', 'application/json; charset=']
  for (const type of refused) {
    const response = await createPlant(app, '{"id":1,"name":"n"}', { 'content-type': type })
    t.equal(response.statusCode, 415, type)
    t.same(response.json(), { error: 415, message: 'Body must be UTF-8: no other charset is supported' }, type)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
  const accepted = ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json; charset="utf-8"',
    'application/json;charset=Utf-8', 'application/json; charset=utf8', 'application/json; foo=bar; charset=utf-8']
  for (const [index, type] of accepted.entries()) {
    const response = await createPlant(app, `{"id":${index + 1},"name":"n"}`, { 'content-type': type })
    t.equal(response.statusCode, 200, type)
  }
  t.equal((await storedPlants(store)).length, accepted.length)
})

t.test('any Content-Encoding is 415 in the Error shape, and nothing is stored', async (t) => {
  const { app, store } = await buildPlugin(t)
  const plant = '{"id":1,"name":"n"}'
  const encodings: Array<[string, string | Buffer]> = [
    ['gzip', gzipSync(plant)], ['deflate', plant], ['br', plant], ['identity', plant], ['gzip, identity', plant], ['GZIP', plant], ['', plant]
  ]
  for (const [encoding, payload] of encodings) {
    const response = await createPlant(app, payload, { 'content-encoding': encoding })
    t.equal(response.statusCode, 415, `Content-Encoding: ${encoding}`)
    t.same(response.json(), { error: 415, message: 'Content-Encoding is not supported: send the body as it is' }, encoding)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
})
