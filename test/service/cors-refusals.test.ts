import t from 'tap'
import { METHOD_NOT_ALLOWED } from '../../plugins/http/method-not-allowed.js'
import { AUTH, build } from '../helpers/app.js'

const LISTED = 'https://app.example'
const accessControl = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => name.startsWith('access-control-'))

t.test('with CORS_ORIGINS, a listed origin\'s preflight is granted, without a token', async (t) => {
  const { app } = await build(t, {}, { corsOrigins: [LISTED] })
  const response = await app.inject({
    method: 'OPTIONS',
    url: '/plants',
    headers: { origin: LISTED, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
  })
  t.equal(response.statusCode, 204)
  t.match(response.headers, {
    'access-control-allow-origin': LISTED,
    'access-control-allow-methods': 'GET, POST, PUT, DELETE',
    'access-control-allow-headers': 'authorization, content-type, if-match, if-none-match, last-event-id',
    'access-control-max-age': '600'
  })
  const get = await app.inject({ url: '/plants', headers: { ...AUTH, origin: LISTED } })
  t.equal(get.headers['access-control-allow-origin'], LISTED, 'and its requests may be read')
  t.match(get.headers['access-control-expose-headers'], /retry-after/)
})

t.test('a listed origin may PUT a plant with If-Match, and read its ETag and a list\'s Link', async (t) => {
  const { app } = await build(t, {}, { corsOrigins: [LISTED] })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants/1',
    headers: { origin: LISTED, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization,content-type,if-match' }
  })
  t.equal(preflight.statusCode, 204)
  t.match(preflight.headers['access-control-allow-methods'], /\bPUT\b/, 'PUT allowed')
  t.match(preflight.headers['access-control-allow-headers'], /\bif-match\b/, 'If-Match allowed')
  t.match(preflight.headers['access-control-allow-headers'], /\bif-none-match\b/)
  t.match(preflight.headers['access-control-allow-headers'], /\blast-event-id\b/, 'and Last-Event-ID, for the change feed')
  const get = await app.inject({ url: '/plants', headers: { ...AUTH, origin: LISTED } })
  const exposed = String(get.headers['access-control-expose-headers']).split(/,\s*/)
  t.ok(exposed.includes('etag'), 'ETag exposed')
  t.ok(exposed.includes('link'), 'Link exposed')
})

t.test('an origin not listed gets no Access-Control-* header at all, its preflight a 405 in the Error shape', async (t) => {
  const { app } = await build(t, {}, { corsOrigins: [LISTED] })
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/plants', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' }
  })
  t.same(accessControl(preflight.headers), [], 'no Access-Control-* on the preflight')
  t.equal(preflight.statusCode, 405)
  t.equal(preflight.headers.allow, 'GET, HEAD, POST')
  t.same(preflight.json(), { error: 405, message: METHOD_NOT_ALLOWED })
  for (const headers of [{ origin: 'https://evil.example' }, {}]) {
    const get = await app.inject({ url: '/plants', headers: { ...AUTH, ...headers } })
    t.equal(get.statusCode, 200)
    t.same(accessControl(get.headers), [], `no Access-Control-* on a request from ${headers.origin ?? 'no origin'}`)
  }
})

t.test('an OPTIONS that is no preflight is answered in the Error shape, as without CORS', async (t) => {
  const { app } = await build(t, {}, { corsOrigins: [LISTED] })
  for (const headers of [{ origin: LISTED }, {}]) {
    const response = await app.inject({ method: 'OPTIONS', url: '/plants', headers })
    t.equal(response.statusCode, 405, `from ${headers.origin ?? 'no origin'}`)
    t.match(response.headers['content-type'], /^application\/json/)
    t.same(response.json(), { error: 405, message: METHOD_NOT_ALLOWED })
    t.same(accessControl(response.headers), [])
  }
  const unknown = await app.inject({ method: 'OPTIONS', url: '/nope', headers: { origin: LISTED } })
  t.same(unknown.json(), { error: 404, message: 'Route not found' }, 'an unknown path: 404')
})
