import t from 'tap'
import { METHOD_NOT_ALLOWED } from '../../plugins/http/method-not-allowed.js'
import { AUTH, build } from '../helpers/app.js'

const refused = { error: 405, message: METHOD_NOT_ALLOWED }

t.test('the service answers a method a known path lacks 405 with Allow, in the Error shape, before reading the body', async (t) => {
  const { app } = await build(t)
  for (const [method, url, allow] of [
    ['PUT', '/plants', 'GET, HEAD, POST'],
    ['PATCH', '/plants/1', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/plants/9223372036854775807', 'DELETE, GET, HEAD, PUT'],
    ['DELETE', '/plants', 'GET, HEAD, POST'],
    ['TRACE', '/plants', 'GET, HEAD, POST'],
    ['OPTIONS', '/plants/1', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/readyz', 'GET, HEAD'],
    ['PUT', '/metrics', 'GET, HEAD'],
    ['POST', '/documentation', 'GET, HEAD'],
    ['DELETE', '/documentation/json', 'GET, HEAD'],
    ['PUT', '/documentation/static/index.html', 'GET, HEAD']
  ] as const) {
    const response = await app.inject({ method, url, headers: { ...AUTH, 'content-type': 'application/json' }, payload: method === 'TRACE' || method === 'OPTIONS' ? undefined : '{not json' })
    t.equal(response.statusCode, 405, `${method} ${url}`)
    t.equal(response.headers.allow, allow, `${method} ${url}: Allow`)
    t.same(response.json(), refused, `${method} ${url}: the Error shape, the body never parsed`)
  }
  t.equal((await app.inject({ method: 'HEAD', url: '/plants', headers: AUTH })).statusCode, 200, 'HEAD where GET is: as Fastify answers it')
  t.equal((await app.inject({ method: 'GET', url: '/plants', headers: AUTH })).statusCode, 200, 'the methods a path has still answer')
})

t.test('an unknown path, and /plants/ (an empty id), stay 404 whatever the method', async (t) => {
  const { app } = await build(t)
  for (const [method, url] of [['PUT', '/nope'], ['PATCH', '/plants/'], ['OPTIONS', '/plants/'], ['PUT', '/documentation/static/'], ['OPTIONS', '/nope']] as const) {
    const response = await app.inject({ method, url, headers: AUTH })
    t.equal(response.statusCode, 404, `${method} ${url}`)
    t.equal(response.headers.allow, undefined, `${method} ${url}: no Allow`)
    t.same(response.json(), { error: 404, message: 'Route not found' })
  }
})

t.test('405s are not in the OpenAPI document', async (t) => {
  const { app } = await build(t)
  const paths = (app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths
  t.same(Object.keys(paths['/plants']).sort(), ['get', 'post'])
  t.same(Object.keys(paths['/plants/{id}']).sort(), ['delete', 'get', 'put'])
})
