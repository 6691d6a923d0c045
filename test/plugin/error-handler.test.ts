import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { AUTH, buildPlugin, collectLogs, createPlant, failingStore } from '../helpers/plugin-app.js'

t.test('a bug is a 500 with a generic message, logged with the request id and never sent', async (t) => {
  const { lines, logger } = collectLogs('info')
  const secret = new Error('SELECT * FROM plants failed at /srv/data/plants.db')
  const { app } = await buildPlugin(t, { store: failingStore(() => secret, ['create']) }, { logger })
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
  const { app } = await buildPlugin(t, { store: failingStore(() => new StoreUnavailableError(), ['create']) })
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 503)
  t.same(response.json(), { error: 503, message: 'The plant store is unavailable, try again later' })
})

t.test('an error with a nonsense status code is a 500', async (t) => {
  for (const statusCode of [200, 302, 600, '404']) {
    const error = Object.assign(new Error('strange'), { statusCode })
    const { app } = await buildPlugin(t, { store: failingStore(() => error, ['create']) })
    const response = await createPlant(app, { id: 1, name: 'n' })
    t.equal(response.statusCode, 500, `statusCode ${statusCode}`)
    t.same(response.json(), { error: 500, message: 'Internal server error' })
  }
})

t.test('a thrown non-Error value is a 500', async (t) => {
  const { app } = await buildPlugin(t, { store: failingStore(() => 'a string', ['create']) })
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 500)
  t.same(response.json(), { error: 500, message: 'Internal server error' })
})

t.test('an id of too many digits is a 400 about params/id, not a 500', async (t) => {
  const { app } = await buildPlugin(t)
  const long = await app.inject({ url: `/plants/${'9'.repeat(99)}`, headers: AUTH })
  t.equal(long.statusCode, 400)
  t.match(long.json(), { error: 400, message: /^params\/id must be an integer/ })
})
