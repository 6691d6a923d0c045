import rateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { INTERNAL_ERROR_MESSAGE } from '../../plugins/http/error-handler.js'
import plantStore from '../../src/plugin.js'
import { AUTH, TOKEN } from '../helpers/plugin-app.js'

/** A host with a maintenance switch, a global limiter of 2 requests, and its own error shape. */
async function host (t: Test, hostErrors?: 'host' | 'plugin', ownHandler = true) {
  const app = Fastify()
  t.teardown(() => app.close())
  const seen: number[] = []
  let maintenance = false
  if (ownHandler) {
    app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
      seen.push(error.statusCode ?? 500)
      return reply.code(error.statusCode ?? 500).send({ ok: false, reason: error.message })
    })
  }
  await app.register(rateLimit, { max: 2, timeWindow: 60_000 })
  app.addHook('onRequest', async (_request, reply) => {
    if (!maintenance) return
    reply.code(503)
    throw Object.assign(new Error('Down for maintenance'), { statusCode: 503 })
  })
  await app.register(plantStore, { tokens: [TOKEN], store: 'memory:', ...(hostErrors && { hostErrors }) })
  await app.ready()
  return { app, seen, maintain: () => { maintenance = true } }
}

// Reported: the host's 503 and its limiter's 429 came out in the plugin's shape, its handler never called.
t.test('errors the host raises on the plant routes reach the host\'s error handler, in the host\'s shape', async (t) => {
  const { app, seen, maintain } = await host(t)
  const own = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{"id":"x"}' })
  t.equal(own.statusCode, 400)
  t.same(Object.keys(own.json()), ['error', 'message'], 'the plugin\'s own refusals keep the Error shape')
  const limited = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(limited.statusCode, 200)
  const refused = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(refused.statusCode, 429)
  t.same(refused.json(), { ok: false, reason: 'Rate limit exceeded, retry in 1 minute' }, 'the host\'s limiter, the host\'s shape')
  maintain()
  const down = await app.inject({ url: '/healthz' })
  t.equal(down.statusCode, 503)
  t.same(down.json(), { ok: false, reason: 'Down for maintenance' })
  t.same(seen, [429, 503], 'the host\'s handler saw both, and nothing of the plugin\'s')
})

t.test('with hostErrors: plugin, the plugin answers them in its Error shape', async (t) => {
  const { app, seen, maintain } = await host(t, 'plugin')
  await app.inject({ url: '/plants', headers: AUTH })
  await app.inject({ url: '/plants', headers: AUTH })
  const refused = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(refused.statusCode, 429)
  t.same(refused.json(), { error: 429, message: 'Rate limit exceeded, retry in 1 minute' })
  maintain()
  const down = await app.inject({ url: '/plants', headers: AUTH })
  t.same(down.json(), { error: 503, message: 'Down for maintenance' })
  t.same(seen, [], 'the host\'s handler is not called')
})

t.test('a host without an error handler of its own gets them in the Error shape (Fastify\'s default could not answer there)', async (t) => {
  const { app, maintain } = await host(t, 'host', false)
  maintain()
  const down = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(down.statusCode, 503)
  t.same(down.json(), { error: 503, message: 'Down for maintenance' })
  const crash = Fastify()
  t.teardown(() => crash.close())
  crash.addHook('onRequest', async () => { throw new Error('a bug in the host\'s hook') })
  await crash.register(plantStore, { tokens: [TOKEN], store: 'memory:' })
  t.same((await crash.inject({ url: '/plants', headers: AUTH })).json(), { error: 500, message: INTERNAL_ERROR_MESSAGE })
})
