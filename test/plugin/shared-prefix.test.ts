import Fastify from 'fastify'
import t from 'tap'
import plantStore, { PlantStoreOptionsError } from '../../src/plugin.js'
import { AUTH, TOKEN } from '../helpers/plugin-app.js'

const options = { tokens: [TOKEN], store: 'memory:' }

// Reported: this host died at registration with "Method 'ACL' already declared for route '/api/v1/*'".
t.test('a host scope at /api/v1 with its own not-found handler, and plant-store at /api/v1: both work', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(async (api) => {
    api.setNotFoundHandler((_request, reply) => reply.code(404).send({ hostNotFound: true }))
    api.get('/orderz', async () => ({ orders: [] }))
  }, { prefix: '/api/v1' })
  await host.register(plantStore, { ...options, prefix: '/api/v1' })
  await host.ready()
  t.same((await host.inject({ url: '/api/v1/orderz' })).json(), { orders: [] })
  t.same((await host.inject({ url: '/api/v1/nope' })).json(), { hostNotFound: true }, 'unknown routes there are the host\'s')
  t.equal((await host.inject({ url: '/api/v1/plants', headers: AUTH })).statusCode, 200)
})

t.test('without a handler of the host\'s, its unknown routes under the shared prefix get the host\'s 404, not the plugin\'s', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  host.get('/api/v1/orders', async () => [])
  await host.register(plantStore, { ...options, prefix: '/api/v1' })
  await host.ready()
  const typo = await host.inject({ url: '/api/v1/orderz' })
  t.equal(typo.statusCode, 404)
  t.match(typo.json(), { statusCode: 404, error: 'Not Found' }, 'Fastify\'s 404, the host\'s own')
})

/** The error registering fails with, and at which step: registering plant-store, or the host's ready(). */
async function registrationError (declare: (host: ReturnType<typeof Fastify>) => void, given: Record<string, unknown>) {
  const host = Fastify()
  let step = 'register'
  try {
    declare(host)
    await host.register(plantStore, { ...options, prefix: '/api/v1', ...given })
    step = 'ready'
    await host.ready()
    return { error: undefined, step }
  } catch (error) {
    return { error: error as Error, step }
  } finally {
    await host.close()
  }
}

t.test('a clash with a route the host declared fails at once, naming plant-store and the option to change', async (t) => {
  const health = await registrationError((host) => host.get('/api/v1/healthz', async () => 'host'), {})
  t.type(health.error, PlantStoreOptionsError)
  t.equal(health.error?.message, 'plant-store: GET /api/v1/healthz is declared already by the host: set the option health: false to keep ' +
    'the host\'s, or register plant-store under another prefix (its prefix option)')
  t.equal(health.step, 'register', 'at once: registering plant-store fails, not the host\'s ready() later')
  const plants = await registrationError((host) => host.delete('/api/v1/plants/:id', async () => 'host'), {})
  t.match(plants.error?.message, /^plant-store: DELETE \/api\/v1\/plants\/:id is declared already by the host: register plant-store under another prefix/)
  const wildcard = await registrationError((host) => host.get('/api/v1/*', async () => 'host'), { notFound: true })
  t.match(wildcard.error?.message, /^plant-store: (GET|a route at) \/api\/v1\/\* is declared already by the host: set the option notFound: false/)
  t.equal((await registrationError((host) => host.get('/api/v1/*', async () => 'host'), {})).error, undefined,
    'without notFound the host\'s wildcard is no clash')
  const other = await registrationError((host) => host.addHook('onRoute', () => { throw new Error('the host refuses it') }), {})
  t.equal(other.error?.message, 'the host refuses it', 'other registration errors pass through as they are')
})
