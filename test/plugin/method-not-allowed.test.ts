import Fastify from 'fastify'
import t from 'tap'
import { METHOD_NOT_ALLOWED } from '../../plugins/http/method-not-allowed.js'
import plantStore from '../../src/plugin.js'
import { AUTH, buildPlugin, TOKEN } from '../helpers/plugin-app.js'

const refused = { error: 405, message: METHOD_NOT_ALLOWED }

t.test('a method the plant and health paths lack is 405 with Allow, in the Error shape, before the body is read', async (t) => {
  const { app } = await buildPlugin(t)
  for (const [method, url, allow] of [
    ['PUT', '/plants', 'GET, HEAD, POST'],
    ['PATCH', '/plants/1', 'DELETE, GET, HEAD, PUT'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/readyz', 'GET, HEAD']
  ] as const) {
    const response = await app.inject({ method, url, headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{not json' })
    t.equal(response.statusCode, 405, `${method} ${url}`)
    t.equal(response.headers.allow, allow, `${method} ${url}: Allow`)
    t.same(response.json(), refused, `${method} ${url}: the Error shape, the body never parsed`)
  }
})

t.test('embedded: the plant paths answer 405 under the plugin\'s prefix; the host\'s routes and not-found handler are its own', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  host.setNotFoundHandler((_request, reply) => reply.code(404).send({ hostNotFound: true }))
  host.patch('/api/plants/:id', async () => ({ hostPatch: true }))
  host.patch('/api/*', async () => ({ hostWildcard: true }))
  await host.register(plantStore, { prefix: '/api', tokens: [TOKEN], store: 'memory:' })
  host.get('/other', async () => ({ host: true }))
  await host.ready()
  const put = await host.inject({ method: 'PUT', url: '/api/plants', headers: AUTH })
  t.equal(put.statusCode, 405)
  t.equal(put.headers.allow, 'GET, HEAD, POST')
  t.same(put.json(), refused)
  const post = await host.inject({ method: 'POST', url: '/api/plants/1', headers: AUTH })
  t.equal(post.statusCode, 405)
  t.equal(post.headers.allow, 'DELETE, GET, HEAD, PUT')
  t.equal((await host.inject({ method: 'POST', url: '/api/readyz' })).headers.allow, 'GET, HEAD', 'the health paths too')
  t.same((await host.inject({ method: 'PATCH', url: '/api/plants/1' })).json(), { hostPatch: true }, 'a method the host routes there stays the host\'s')
  t.same((await host.inject({ method: 'PATCH', url: '/api/plants' })).json(), { hostWildcard: true }, 'and one a wildcard of the host\'s answers')
  t.same((await host.inject({ method: 'PUT', url: '/api/nope' })).json(), { hostNotFound: true }, 'unknown paths: the host\'s not-found handler')
  t.same((await host.inject({ method: 'POST', url: '/api/plants/' })).json(), { hostNotFound: true }, 'an empty id: the host\'s not-found handler')
  t.equal((await host.inject({ method: 'OPTIONS', url: '/api/plants' })).statusCode, 404, 'OPTIONS is left to the host (its CORS)')
  t.same((await host.inject({ method: 'POST', url: '/other' })).json(), { hostNotFound: true }, 'the host\'s own paths are untouched')
})

t.test('embedded with notFound: true, a method a route lacks is 405 and an unknown path the plugin\'s 404', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(plantStore, { prefix: '/store', tokens: [TOKEN], store: 'memory:', notFound: true })
  const patch = await host.inject({ method: 'PATCH', url: '/store/plants', headers: AUTH })
  t.equal(patch.statusCode, 405)
  t.equal(patch.headers.allow, 'GET, HEAD, POST')
  t.same((await host.inject({ method: 'PATCH', url: '/store/nope' })).json(), { error: 404, message: 'Route not found' })
})

t.test('embedded under a host whose catch-all answers every method: no 405 shadows it', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  host.all('/*', async (request) => ({ hostCatchAll: request.method }))
  await host.register(plantStore, { tokens: [TOKEN], store: 'memory:' })
  await host.ready()
  for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
    const answer = await host.inject({ method, url: '/plants' })
    t.equal(answer.statusCode, 200, `${method} /plants: the host's`)
    t.same(answer.json(), { hostCatchAll: method })
    t.equal(answer.headers.allow, undefined)
  }
  t.equal((await host.inject({ method: 'POST', url: '/plants/1' })).json().hostCatchAll, 'POST')
  t.equal((await host.inject({ method: 'GET', url: '/plants', headers: AUTH })).statusCode, 200, 'the plugin\'s own methods stay its own')
})
