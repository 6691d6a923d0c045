import t from 'tap'
import { UnsupportedMediaTypeError } from '../../plugins/http/errors.js'
import { buildPlugin, createPlant, storedPlants } from '../helpers/plugin-app.js'

const INT64_RANGE = 'must be an integer from -9223372036854775808 to 9223372036854775807'
// The plugin's own words, whatever Fastify's version says (5.0.0 adds the type sent).
const UNSUPPORTED = new UnsupportedMediaTypeError().message
const STORABLE_TEXT = 'must not contain U+0000 or an unpaired surrogate code unit'

interface BadInput {
  payload: string | Buffer
  status: number
  message: string | RegExp
  headers?: Record<string, string>
}

// Each bad request must end in the Error shape, with its status, and store nothing.
const cases: Record<string, BadInput> = {
  'an id given as a string': { payload: '{"id":"5","name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'a null id': { payload: '{"id":null,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'a boolean id': { payload: '{"id":true,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'a fractional id': { payload: '{"id":1.5,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'a fraction too small for a double to see': { payload: '{"id":1.0000000000000000001,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'an id just above int64': { payload: '{"id":9223372036854775808,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'an id just below int64': { payload: '{"id":-9223372036854775809,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'an id with a huge exponent': { payload: '{"id":1e999999999,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'an id with a tiny exponent': { payload: '{"id":1e-999999999,"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'an id as an object': { payload: '{"id":{"value":1},"name":"n"}', status: 400, message: `body/id ${INT64_RANGE}` },
  'a missing id': { payload: '{"name":"n"}', status: 400, message: "body must have required property 'id'" },
  'a missing name': { payload: '{"id":1}', status: 400, message: "body must have required property 'name'" },
  'a number as the name': { payload: '{"id":1,"name":7}', status: 400, message: 'body/name must be string' },
  'a null name': { payload: '{"id":1,"name":null}', status: 400, message: 'body/name must be string' },
  'an object as the name': { payload: '{"id":1,"name":{}}', status: 400, message: 'body/name must be string' },
  'a number as the tag': { payload: '{"id":1,"name":"n","tag":3}', status: 400, message: 'body/tag must be string' },
  'a null tag': { payload: '{"id":1,"name":"n","tag":null}', status: 400, message: 'body/tag must be string' },
  // Said in words: a client is never shown the regular expression.
  'a name with U+0000': { payload: '{"id":1,"name":"a\\u0000b"}', status: 400, message: `body/name ${STORABLE_TEXT}` },
  'a name with an unpaired high surrogate': { payload: '{"id":1,"name":"\\ud800"}', status: 400, message: `body/name ${STORABLE_TEXT}` },
  'a tag with an unpaired low surrogate': { payload: '{"id":1,"name":"n","tag":"x\\udfff"}', status: 400, message: `body/tag ${STORABLE_TEXT}` },
  'a name too long': { payload: `{"id":1,"name":"${'x'.repeat(101)}"}`, status: 400, message: 'body/name must NOT have more than 100 characters' },
  'a body that is not valid UTF-8': { payload: Buffer.from([...Buffer.from('{"id":1,"name":"'), 0xff, 0xfe, ...Buffer.from('"}')]), status: 400, message: 'Body is not valid UTF-8' },
  'an array body': { payload: '[{"id":1,"name":"n"}]', status: 400, message: 'body must be object' },
  'a null body': { payload: 'null', status: 400, message: 'body must be object' },
  'a string body': { payload: '"plant"', status: 400, message: 'body must be object' },
  'broken JSON': { payload: '{"id":1,"name":', status: 400, message: 'Body is not valid JSON' },
  'broken JSON with a long id': { payload: '{"id":12345678901234567,"name":', status: 400, message: 'Body is not valid JSON' },
  'trailing garbage': { payload: '{"id":1,"name":"n"} x', status: 400, message: 'Body is not valid JSON' },
  'an empty body': { payload: '', status: 400, message: 'Body must not be empty' },
  'a __proto__ key': { payload: '{"id":1,"name":"n","__proto__":{"admin":true}}', status: 400, message: 'Body contains a forbidden __proto__ or constructor.prototype key' },
  'an escaped __proto__ key': { payload: '{"id":1,"name":"n","\\u005f_proto__":{"admin":true}}', status: 400, message: 'Body contains a forbidden __proto__ or constructor.prototype key' },
  'a constructor.prototype key': { payload: '{"id":1,"name":"n","constructor":{"prototype":{"admin":true}}}', status: 400, message: 'Body contains a forbidden __proto__ or constructor.prototype key' },
  'a __proto__ key with a long id': { payload: '{"id":12345678901234567,"name":"n","__proto__":{}}', status: 400, message: 'Body contains a forbidden __proto__ or constructor.prototype key' },
  'a text/plain body': { payload: '{"id":1,"name":"n"}', headers: { 'content-type': 'text/plain' }, status: 415, message: UNSUPPORTED },
  'a form body': { payload: 'id=1&name=n', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, message: UNSUPPORTED },
  'a JSON-like vendor type': { payload: '{"id":1,"name":"n"}', headers: { 'content-type': 'application/vnd.api+json' }, status: 415, message: UNSUPPORTED },
  'a body larger than the limit': { payload: JSON.stringify({ id: 1, name: 'x'.repeat(300) }), status: 413, message: 'Request body is too large' }
}

t.test('each bad request is refused in the Error shape and stores nothing', async (t) => {
  const { app, store } = await buildPlugin(t, { bodyLimit: 256, maxTextLength: 100 })
  for (const [title, { payload, headers, status, message }] of Object.entries(cases)) {
    const response = await createPlant(app, payload, headers)
    t.equal(response.statusCode, status, `${title}: status`)
    t.match(response.headers['content-type'], /^application\/json/, `${title}: JSON`)
    const body = response.json()
    t.same(Object.keys(body).sort(), ['error', 'message'], `${title}: exactly error and message`)
    t.equal(body.error, status, `${title}: error is the status`)
    if (typeof message === 'string') t.equal(body.message, message, `${title}: message`)
    else t.match(body.message, message, `${title}: message`)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
})

t.test('a POST without a content type is 415 and stores nothing', async (t) => {
  const { app, store } = await buildPlugin(t)
  const response = await app.inject({
    method: 'POST', url: '/plants', headers: { authorization: 'Bearer test-token-0123456789' }, payload: Buffer.from('{"id":1,"name":"n"}')
  })
  t.equal(response.statusCode, 415)
  t.same(response.json(), { error: 415, message: UNSUPPORTED })
  t.same(await storedPlants(store), [])
})

t.test('a POST without a body is 400 and stores nothing', async (t) => {
  const { app, store } = await buildPlugin(t)
  const response = await app.inject({ method: 'POST', url: '/plants', headers: { authorization: 'Bearer test-token-0123456789' } })
  t.equal(response.statusCode, 400)
  t.same(response.json(), { error: 400, message: 'body must be object' })
  t.same(await storedPlants(store), [])
})

t.test('the default body limit is 1 MiB', async (t) => {
  const { app, store } = await buildPlugin(t)
  // Unknown properties are ignored, and take no name's maximum.
  const fits = JSON.stringify({ id: 1, name: 'n', padding: 'x'.repeat(1024 * 1024 - 40) })
  const tooLarge = JSON.stringify({ id: 2, name: 'n', padding: 'x'.repeat(1024 * 1024) })
  t.equal((await createPlant(app, fits)).statusCode, 200)
  t.equal((await createPlant(app, tooLarge)).statusCode, 413)
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n])
})
