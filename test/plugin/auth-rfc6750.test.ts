import t from 'tap'
import { tokenChecker } from '../../plugins/auth/index.js'
import { buildPlugin, collectLogs, createPlant, JSON_TYPE, OTHER_TOKEN, storedPlants, TOKEN } from '../helpers/plugin-app.js'

const CHALLENGE = 'Bearer realm="plant-store"'
const INVALID_TOKEN = `${CHALLENGE}, error="invalid_token"`
const body = '{"id":1,"name":"n"}'

const refusals: Record<string, { authorization?: string, challenge: string }> = {
  'no Authorization header': { challenge: CHALLENGE },
  'another scheme': { authorization: `Basic ${TOKEN}`, challenge: CHALLENGE },
  'the scheme alone': { authorization: 'Bearer', challenge: CHALLENGE },
  'an empty token': { authorization: 'Bearer ', challenge: CHALLENGE },
  'an unknown token': { authorization: 'Bearer not-a-token', challenge: INVALID_TOKEN },
  'a prefix of a token': { authorization: `Bearer ${TOKEN.slice(0, -1)}`, challenge: INVALID_TOKEN },
  'a token with extra characters': { authorization: `Bearer ${TOKEN}x`, challenge: INVALID_TOKEN },
  'two tokens joined': { authorization: `Bearer ${TOKEN},${OTHER_TOKEN}`, challenge: INVALID_TOKEN }
}

t.test('every refusal is a 401 in the Error shape with a challenge, and stores nothing', async (t) => {
  const { app, store } = await buildPlugin(t)
  for (const [title, { authorization, challenge }] of Object.entries(refusals)) {
    const response = await app.inject({
      method: 'POST', url: '/plants', payload: body, headers: { ...JSON_TYPE, ...(authorization === undefined ? {} : { authorization }) }
    })
    t.equal(response.statusCode, 401, title)
    t.same(response.json(), { error: 401, message: 'A valid bearer token is required' }, title)
    t.equal(response.headers['www-authenticate'], challenge, `${title}: challenge`)
  }
  t.same(await storedPlants(store), [])
})

t.test('the scheme name is case-insensitive', async (t) => {
  const { app } = await buildPlugin(t)
  for (const [i, scheme] of ['bearer', 'BEARER', 'BeArEr'].entries()) {
    const response = await createPlant(app, { id: i, name: 'n' }, { authorization: `${scheme} ${TOKEN}` })
    t.equal(response.statusCode, 200, scheme)
  }
})

t.test('every configured token is accepted', async (t) => {
  const { app } = await buildPlugin(t)
  t.equal((await createPlant(app, { id: 1, name: 'n' }, { authorization: `Bearer ${OTHER_TOKEN}` })).statusCode, 200)
  t.equal((await createPlant(app, { id: 2, name: 'n' }, { authorization: `Bearer ${TOKEN}` })).statusCode, 200)
})

t.test('authentication comes before the body: an anonymous bad body is 401', async (t) => {
  const { app } = await buildPlugin(t)
  const response = await app.inject({ method: 'POST', url: '/plants', headers: JSON_TYPE, payload: '{broken' })
  t.equal(response.statusCode, 401)
  const wrongType = await app.inject({ method: 'POST', url: '/plants', headers: { 'content-type': 'text/plain' }, payload: 'x' })
  t.equal(wrongType.statusCode, 401)
})

t.test('the read, list and delete routes need a token too', async (t) => {
  const { app } = await buildPlugin(t)
  for (const [method, url] of [['GET', '/plants/1'], ['GET', '/plants'], ['DELETE', '/plants/1']] as const) {
    const response = await app.inject({ method, url })
    t.equal(response.statusCode, 401, `${method} ${url}`)
    t.equal(response.headers['www-authenticate'], CHALLENGE)
  }
})

t.test('health and readiness are public', async (t) => {
  const { app } = await buildPlugin(t)
  for (const url of ['/healthz', '/readyz']) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 200, url)
  }
})

t.test('refusals are logged below error level and tokens are never logged', async (t) => {
  const { lines, logger } = collectLogs('trace')
  const { app } = await buildPlugin(t, {}, { logger })
  t.equal((await createPlant(app, { id: 1, name: 'n' })).statusCode, 200)
  t.equal((await createPlant(app, { id: 2, name: 'n' }, { authorization: 'Bearer wrong-secret-token' })).statusCode, 401)
  const log = JSON.stringify(lines)
  t.notOk(log.includes(TOKEN), 'the valid token is not in the log')
  t.notOk(log.includes('wrong-secret-token'), 'the refused token is not in the log')
  t.ok(lines.some((line) => line.msg === 'request refused: A valid bearer token is required'), 'the refusal is logged')
  t.same(lines.filter((line) => Number(line.level) >= 50), [], 'nothing at error level')
})

t.test('tokenChecker matches whole tokens only, against every configured one', async (t) => {
  const check = tokenChecker(['alpha', 'beta-longer-token'])
  t.equal(check('alpha'), true)
  t.equal(check('beta-longer-token'), true)
  t.equal(check('alph'), false)
  t.equal(check('alphaa'), false)
  t.equal(check(''), false)
  t.equal(check('beta-longer-toke'), false, 'a prefix of the longer token')
  t.equal(check('beta-longer-token!'), false, 'longer than every token')
  t.equal(check('alpha\u0000'), false, 'a NUL is not padding')
  t.equal(check('alph\u00e4'), false, 'one character that differs only past ASCII')
  t.equal(check('\u0101lpha'), false, 'a character whose low byte is an "a"')
  t.equal(tokenChecker(['grüner-token'])('grüner-token'), true, 'tokens compare as UTF-8')
  // Three bytes a character, past the smallest padded width: the token fills the width, and a
  // longer one is cut to it.
  const wide = '€'.repeat(100)
  t.equal(tokenChecker([wide])(wide), true)
  t.equal(tokenChecker([wide])(`${wide}€`), false, 'a token cut to the width of the longest is still refused')
  t.equal(tokenChecker([wide])(wide.slice(1)), false)
  t.equal(tokenChecker([])('anything'), false)
  t.equal(tokenChecker([])(''), false, 'no token configured: even the empty one is refused')
})
