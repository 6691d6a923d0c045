import t from 'tap'
import { MALFORMED_URL } from '../../plugins/http/error-handler.js'
import { AUTH, build } from '../helpers/app.js'

// What the service answers around the plugin, before any of its routes runs.

t.test('an unknown route is 404 in the Error shape', async (t) => {
  const { app } = await build(t)
  for (const [method, url] of [['GET', '/nope'], ['POST', '/nope/1'], ['PUT', '/plants/'], ['PATCH', '/plants/1/2']] as const) {
    const response = await app.inject({ method, url, headers: AUTH })
    t.equal(response.statusCode, 404, `${method} ${url}`)
    t.same(response.json(), { error: 404, message: 'Route not found' })
  }
})

t.test('a malformed or absurd URL is answered in the Error shape', async (t) => {
  const { app } = await build(t)
  const malformed = await app.inject({ url: '/plants/%zz', headers: AUTH })
  t.equal(malformed.statusCode, 400)
  t.same(malformed.json(), { error: 400, message: MALFORMED_URL })
  const withQuery = await app.inject({ url: '/plants/%zz?access_token=secret', headers: AUTH })
  t.same(withQuery.json(), { error: 400, message: MALFORMED_URL }, 'nothing of the URL is echoed, the query string least')
  const longMalformed = await app.inject({ url: `/plants/%zz${'a'.repeat(3000)}` })
  t.equal(longMalformed.statusCode, 400)
  t.same(longMalformed.json(), { error: 400, message: MALFORMED_URL }, 'a long path is not echoed: the message stays short')
  for (const length of [101, 5000]) {
    const tooLong = await app.inject({ url: `/plants/${'9'.repeat(length)}`, headers: AUTH })
    t.equal(tooLong.statusCode, 400, `an id of ${length} digits`)
    t.same(tooLong.json(), { error: 400, message: 'A path parameter is too long' })
  }
})
