import Fastify from 'fastify'
import t from 'tap'
import { INTERNAL_ERROR_MESSAGE } from '../../plugins/http/error-handler.js'
import plantStore from '../../src/plugin.js'
import { AUTH, TOKEN } from '../helpers/plugin-app.js'

t.test('with hostErrors: plugin, a host onRequest hook that sets a status and throws keeps its status, in the Error shape', async (t) => {
  const host = Fastify()
  host.addHook('onRequest', async (request, reply) => {
    const status = request.headers['x-refuse-with']
    if (status !== undefined) {
      reply.code(Number(status))
      throw new Error(`Refused by the host with ${status}`)
    }
    if (request.headers['x-crash'] !== undefined) throw new Error('a bug in the host hook')
  })
  await host.register(plantStore, { tokens: [TOKEN], store: 'memory:', hostErrors: 'plugin' })
  await host.ready()
  t.teardown(() => host.close())
  for (const status of [403, 429, 451]) {
    const refused = await host.inject({ url: '/plants', headers: { ...AUTH, 'x-refuse-with': String(status) } })
    t.equal(refused.statusCode, status)
    t.same(refused.json(), { error: status, message: `Refused by the host with ${status}` })
  }
  const unavailable = await host.inject({ url: '/plants', headers: { ...AUTH, 'x-refuse-with': '503' } })
  t.equal(unavailable.statusCode, 503, 'a 5xx set by the host stays a 5xx')
  t.same(unavailable.json(), { error: 503, message: 'Refused by the host with 503' })
  const crashed = await host.inject({ url: '/plants', headers: { ...AUTH, 'x-crash': 'yes' } })
  t.equal(crashed.statusCode, 500, 'a hook that throws without setting a status is a 500')
  t.same(crashed.json(), { error: 500, message: INTERNAL_ERROR_MESSAGE }, 'with the generic message, not the hook\'s')
  t.equal((await host.inject({ url: '/plants', headers: AUTH })).statusCode, 200, 'other requests pass')
})

t.test('registered in a host scope with a prefix, the plugin leaves that scope\'s 404s to the host', async (t) => {
  const host = Fastify()
  await host.register(async (api) => {
    api.setNotFoundHandler((_request, reply) => reply.code(404).send({ hostNotFound: true }))
    api.get('/hello', async () => 'hello')
    await api.register(plantStore, { tokens: [TOKEN], store: 'memory:' })
    await api.register(plantStore, { tokens: [TOKEN], store: 'memory:', prefix: '/garden' })
  }, { prefix: '/api' })
  await host.register(plantStore, { tokens: [TOKEN], store: 'memory:', prefix: '/' })
  await host.ready()
  t.teardown(() => host.close())
  t.strictSame((await host.inject({ url: '/api/nope' })).json(), { hostNotFound: true }, 'the host scope\'s own 404')
  t.equal((await host.inject({ url: '/api/plants', headers: AUTH })).statusCode, 200, 'the plant routes are under /api')
  t.strictSame((await host.inject({ url: '/api/garden/nope' })).json(), { hostNotFound: true },
    'under a prefix of its own too, unless the host asks the plugin (notFound: true)')
  const root = await host.inject({ url: '/nope' })
  t.equal(root.statusCode, 404)
  t.notSame(root.json(), { error: 404, message: 'Route not found' }, 'prefix \'/\' does not take over the host\'s root 404')
})
