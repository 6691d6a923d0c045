import t from 'tap'
import { MALFORMED_URL } from '../../plugins/http/error-handler.js'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { AUTH, build, collectLogs, createPlant, failingStore } from '../helpers/app.js'

t.test('an unknown route is 404 in the Error shape', async (t) => {
  const { app } = await build(t)
  for (const [method, url] of [['GET', '/nope'], ['POST', '/nope/1'], ['PUT', '/plants/'], ['PATCH', '/plants/1/2']] as const) {
    const response = await app.inject({ method, url, headers: AUTH })
    t.equal(response.statusCode, 404, `${method} ${url}`)
    t.same(response.json(), { error: 404, message: 'Route not found' })
  }
})

t.test('a bug is a 500 with a generic message, logged with the request id and never sent', async (t) => {
  const { lines, logger } = collectLogs('info')
  const secret = new Error('SELECT * FROM plants failed at /srv/data/plants.db')
  const { app } = await build(t, { store: failingStore(() => secret, ['create']) }, { logger })
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 500)
  t.same(response.json(), { error: 500, message: 'Internal server error' })
  t.notMatch(response.body, /SELECT|plants\.db|at /)
  const logged = lines.find((line) => line.msg === 'request failed')
  t.ok(logged, 'the failure is logged')
  t.equal(logged?.level, 50, 'at error level')
  t.ok(logged?.reqId, 'with the request id')
  t.match(JSON.stringify(logged), /plants\.db/, 'with the real error for the operator')
})

t.test('an unavailable store is 503 with its message', async (t) => {
  const { app } = await build(t, { store: failingStore(() => new StoreUnavailableError(), ['create']) })
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 503)
  t.same(response.json(), { error: 503, message: 'The plant store is unavailable, try again later' })
})

t.test('an error with a nonsense status code is a 500', async (t) => {
  for (const statusCode of [200, 302, 600, '404']) {
    const error = Object.assign(new Error('strange'), { statusCode })
    const { app } = await build(t, { store: failingStore(() => error, ['create']) })
    const response = await createPlant(app, { id: 1, name: 'n' })
    t.equal(response.statusCode, 500, `statusCode ${statusCode}`)
    t.same(response.json(), { error: 500, message: 'Internal server error' })
  }
})

t.test('a thrown non-Error value is a 500', async (t) => {
  const { app } = await build(t, { store: failingStore(() => 'a string', ['create']) })
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 500)
  t.same(response.json(), { error: 500, message: 'Internal server error' })
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
  const long = await app.inject({ url: `/plants/${'9'.repeat(99)}`, headers: AUTH })
  t.equal(long.statusCode, 400)
  t.match(long.json(), { error: 400, message: /^params\/id must be an integer/ })
  for (const length of [101, 5000]) {
    const tooLong = await app.inject({ url: `/plants/${'9'.repeat(length)}`, headers: AUTH })
    t.equal(tooLong.statusCode, 400, `an id of ${length} digits`)
    t.same(tooLong.json(), { error: 400, message: 'A path parameter is too long' })
  }
})
