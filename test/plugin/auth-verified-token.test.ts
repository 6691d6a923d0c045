/**
 * Auth tells the hooks after its own whether a request's credential verified (`hasVerifiedToken`,
 * a request decoration of the plugin's scope): with the plugin's tokens and with the host's
 * `authenticate`, whatever is answered after it, and never on routes outside the plugin's auth.
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import t from 'tap'
import auth from '../../plugins/auth/index.js'
import plantStore from '../../src/plugin.js'
import { hasVerifiedToken } from '../../src/service-api.js'
import { JSON_TYPE, OTHER_TOKEN, TOKEN } from '../helpers/app.js'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Notes, for each request the host's root hook sees answered, its path, status and whether its credential verified. */
function noteVerified (host: FastifyInstance) {
  const seen: Array<[string, number, boolean]> = []
  host.addHook('onResponse', async (request, reply) => { seen.push([request.url, reply.statusCode, hasVerifiedToken(request)]) })
  return seen
}

t.test('on a bare instance, auth marks a request whose token verified, from its own hook on', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  const seen = noteVerified(app)
  const inHandler: boolean[] = []
  await app.register(async (scope) => {
    await scope.register(auth, { tokens: [TOKEN, OTHER_TOKEN], failureLimit: false })
    scope.get('/guarded', async (request: FastifyRequest) => {
      inHandler.push(hasVerifiedToken(request))
      return { ok: true }
    })
  })
  app.get('/open', async () => ({ ok: true }))
  await app.ready()

  t.equal((await app.inject({ url: '/guarded', headers: bearer(TOKEN) })).statusCode, 200)
  t.equal((await app.inject({ url: '/guarded', headers: { authorization: `bearer ${OTHER_TOKEN}` } })).statusCode, 200)
  t.equal((await app.inject({ url: '/guarded', headers: bearer('wrong') })).statusCode, 401)
  t.equal((await app.inject({ url: '/guarded' })).statusCode, 401)
  t.equal((await app.inject({ url: '/open', headers: bearer(TOKEN) })).statusCode, 200)
  t.same(inHandler, [true, true], 'the route\'s handler sees each accepted token verified')
  t.same(seen, [['/guarded', 200, true], ['/guarded', 200, true], ['/guarded', 401, false], ['/guarded', 401, false], ['/open', 200, false]],
    'a refused or missing token is not verified, nor is a token sent to a route outside auth\'s scope')
  t.notOk(app.hasRequestDecorator('plantStoreVerifiedToken'), 'the decoration stays inside the scope that registered auth')
})

t.test('through the plugin with its tokens: a verified token stays marked when the body is then refused', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  const seen = noteVerified(host)
  await host.register(plantStore, { store: 'memory:', tokens: [TOKEN] })
  host.get('/host-route', async () => ({ ok: true }))
  await host.ready()

  const post = (payload: string, headers: Record<string, string>) => host.inject({ method: 'POST', url: '/plants', payload, headers: { ...JSON_TYPE, ...headers } })
  t.equal((await post('{"id":1,"name":"n"}', bearer(TOKEN))).statusCode, 200)
  t.equal((await post('{"id":"one"}', bearer(TOKEN))).statusCode, 400, 'refused by validation')
  t.equal((await post('{"id":', bearer(TOKEN))).statusCode, 400, 'a body that is not JSON')
  t.equal((await post('{"id":2,"name":"n"}', bearer('wrong'))).statusCode, 401)
  t.equal((await host.inject({ url: '/healthz', headers: bearer(TOKEN) })).statusCode, 200)
  t.equal((await host.inject({ url: '/host-route', headers: bearer(TOKEN) })).statusCode, 200)
  t.same(seen.map(([, status, verified]) => [status, verified]), [[200, true], [400, true], [400, true], [401, false], [200, false], [200, false]],
    'verified before the body is read; never on the health route or the host\'s own route')
})

t.test('through the plugin with the host\'s authenticate: a request it identifies is marked, one it refuses is not', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  const seen = noteVerified(host)
  await host.register(plantStore, {
    store: 'memory:',
    authenticate: (request: FastifyRequest) => request.headers['x-user'] === 'ada' && 'ada'
  })
  await host.ready()

  t.equal((await host.inject({ url: '/plants', headers: { 'x-user': 'ada' } })).statusCode, 200)
  t.equal((await host.inject({ url: '/plants', headers: { 'x-user': 'eve' } })).statusCode, 401)
  t.equal((await host.inject({ url: '/plants' })).statusCode, 401)
  t.same(seen.map(([, status, verified]) => [status, verified]), [[200, true], [401, false], [401, false]])
})
