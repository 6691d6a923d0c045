import rateLimit from '@fastify/rate-limit'
import Fastify, { type RouteOptions } from 'fastify'
import t, { type Test } from 'tap'
import plantStore from '../../src/plugin.js'
import { AUTH, TOKEN } from '../helpers/plugin-app.js'

/** A host with a global @fastify/rate-limit of 3 requests a minute per address. */
async function limitedHost (t: Test, options: Record<string, unknown> = {}) {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(rateLimit, { max: 3, timeWindow: 60_000 })
  const configs = new Map<string, unknown>()
  host.addHook('onRoute', (route: RouteOptions) => { if (route.method === 'GET') configs.set(route.url, route.config) })
  await host.register(plantStore, { prefix: '/api/v1', tokens: [TOKEN], store: 'memory:', ...options })
  await host.ready()
  return { host, configs }
}

// Reported: the host's global limiter gave /api/v1/healthz 429, though the probes are documented as never limited.
t.test('a host\'s global @fastify/rate-limit never limits the health routes', async (t) => {
  const { host } = await limitedHost(t)
  for (let n = 0; n < 6; n++) {
    const answer = await host.inject({ url: '/api/v1/healthz' })
    t.equal(answer.statusCode, 200, `probe ${n + 1}`)
    t.equal(answer.headers['x-ratelimit-limit'], undefined, 'and carries no limiter headers')
  }
})

t.test('without a limit of the plugin\'s, the host\'s limiter applies to the plant routes as to its own', async (t) => {
  const { host } = await limitedHost(t)
  const statuses = []
  for (let n = 0; n < 4; n++) statuses.push((await host.inject({ url: '/api/v1/plants', headers: AUTH })).statusCode)
  t.same(statuses, [200, 200, 200, 429])
})

t.test('with both limits on, the plugin\'s wins on the plant routes: one limit, consistent headers', async (t) => {
  const { host } = await limitedHost(t, { rateLimit: { max: 5, timeWindow: 60_000 } })
  for (let n = 1; n <= 6; n++) {
    const answer = await host.inject({ url: '/api/v1/plants', headers: AUTH })
    t.equal(answer.statusCode, n <= 5 ? 200 : 429, `request ${n}`)
    t.equal(answer.headers['x-ratelimit-limit'], '5', `request ${n}: X-RateLimit-Limit is the plugin's`)
    t.equal(answer.headers['x-ratelimit-remaining'], String(Math.max(0, 5 - n)))
  }
})

t.test('routeConfig passes route config through to the host\'s plugins', async (t) => {
  const { host, configs } = await limitedHost(t, {
    routeConfig: { plants: { rateLimit: { max: 1, timeWindow: 60_000 }, audit: 'plants' }, health: { audit: 'probes' } }
  })
  t.match(configs.get('/api/v1/healthz'), { rateLimit: false, audit: 'probes' })
  t.match(configs.get('/api/v1/plants'), { audit: 'plants' })
  const statuses = []
  for (let n = 0; n < 2; n++) statuses.push((await host.inject({ url: '/api/v1/plants', headers: AUTH })).statusCode)
  t.same(statuses, [200, 429], 'the host\'s limiter reads the plant routes\' own setting')
  const probes = await limitedHost(t, { routeConfig: { health: { rateLimit: { max: 1, timeWindow: 60_000 } } } })
  t.equal((await probes.host.inject({ url: '/api/v1/readyz' })).statusCode, 200)
  t.equal((await probes.host.inject({ url: '/api/v1/readyz' })).statusCode, 429, 'a host may limit its probes if it says so')
})
