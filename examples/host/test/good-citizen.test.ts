import assert from 'node:assert/strict'
import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import plantStore, { securitySchemes, swaggerReferenceName } from 'plant-store'
import { MapStore } from '../src/map-store.js'
import { AUTH, JSON_BODY, TOKEN } from './helpers.js'

const options = { tokens: [TOKEN], store: 'memory:' }

test('one fastify: plant-store resolves the host\'s own copy', () => {
  const hostRequire = createRequire(import.meta.url)
  const pluginRequire = createRequire(hostRequire.resolve('plant-store/package.json'))
  assert.equal(realpathSync(pluginRequire.resolve('fastify')), realpathSync(hostRequire.resolve('fastify')))
})

test('a host with its own Error, Plant and HealthStatus schemas registers the plugin; both keep their names', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '1.0.0' }, components: { securitySchemes } },
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  for (const $id of ['Error', 'Plant', 'NewPlant', 'HealthStatus', 'PlantList']) {
    host.addSchema({ $id, type: 'object', properties: { hostOwn: { type: 'string' } } })
  }
  host.get('/oops', { schema: { response: { 500: { $ref: 'Error#' } } } }, async () => { throw new Error('x') })
  await host.register(plantStore, { ...options, prefix: '/garden' })
  await host.ready()
  const components = (host.swagger() as { components: { schemas: Record<string, { properties?: object }> } }).components.schemas
  assert.deepEqual(components.Error?.properties, { hostOwn: { type: 'string' } }, 'the host\'s Error is the host\'s')
  const pluginNames = Object.keys(components).filter((name) => !['Error', 'Plant', 'NewPlant', 'HealthStatus', 'PlantList'].includes(name))
  assert.ok(pluginNames.length >= 4, `the plugin's schemas have names of their own: ${pluginNames.join(', ')}`)
  for (const name of pluginNames) {
    assert.match(name, /^plant-store\.[A-Za-z]+$/, `${name}: readable, and apart from the host's`)
  }
})

test('the plugin adds no decorator to the host instance', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(plantStore, options)
  await host.ready()
  assert.equal(host.hasDecorator('plantStore'), false)
  // @ts-expect-error plantStore is the plugin's own: it is not on the host's FastifyInstance type either
  assert.equal(host.plantStore, undefined)
})

test('a host with its own /healthz registers without a prefix, with the health routes off', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  host.get('/healthz', async () => 'host')
  await host.register(plantStore, { ...options, health: false })
  await host.ready()
  assert.equal((await host.inject({ url: '/healthz' })).body, 'host')
  assert.equal((await host.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
})

test('a host onRequest hook that sets 403 and throws keeps its 403 on the plant routes', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  host.addHook('onRequest', async (request, reply) => {
    if (request.headers['x-blocked'] !== undefined) {
      reply.code(403)
      throw new Error('Blocked by the host')
    }
  })
  await host.register(plantStore, options)
  await host.ready()
  const blocked = await host.inject({ url: '/plants', headers: { ...AUTH, 'x-blocked': '1' } })
  assert.equal(blocked.statusCode, 403)
  assert.deepEqual(blocked.json(), { error: 403, message: 'Blocked by the host' })
})

test('two instances under two prefixes have distinct operationIds', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'Host', version: '1.0.0' }, components: { securitySchemes } } })
  await host.register(plantStore, { ...options, prefix: '/a' })
  await host.register(plantStore, { ...options, prefix: '/b' })
  await host.ready()
  const doc = host.swagger() as { paths: Record<string, Record<string, { operationId?: string }>> }
  const ids = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map(({ operationId }) => operationId))
  assert.equal(ids.length, 16, 'the 8 operations of each instance: create, read, update, list, delete, the change feed, and the two health routes')
  assert.equal(new Set(ids).size, ids.length, `distinct: ${ids.join(', ')}`)
})

test('load shedding and the rate limit are registered only when asked for', async (t) => {
  const plain = Fastify()
  t.after(() => plain.close())
  await plain.register(plantStore, options)
  await plain.ready()
  assert.doesNotMatch(plain.printPlugins(), /load-shedding|rate-limit/)
  const asked = Fastify()
  t.after(() => asked.close())
  await asked.register(plantStore, { ...options, pressure: { maxEventLoopDelay: 1000 }, rateLimit: { max: 1, timeWindow: 60_000 } })
  await asked.ready()
  assert.match(asked.printPlugins(), /plant-store-load-shedding/)
  assert.equal((await asked.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
  assert.equal((await asked.inject({ url: '/plants', headers: AUTH })).statusCode, 429)
})

test('options that cannot work are refused at registration with one line naming the option', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ store: 'memory:' }, /option tokens is missing/],
    [{ tokens: [TOKEN] }, /option store is missing/],
    [{ tokens: [], store: 'memory:' }, /option tokens is invalid/],
    [{ ...options, rateLimit: { max: 0, timeWindow: 1000 } }, /option rateLimit.max is invalid/]
  ]
  for (const [given, message] of cases) {
    const host = Fastify()
    await assert.rejects(async () => {
      await host.register(plantStore, given as never)
      await host.ready()
    }, message)
    await host.close()
  }
})

test('a store of the host\'s own, written from the README, answers 409 and 503 through the routes', async (t) => {
  const store = new MapStore()
  const host = Fastify()
  // The host passed the store in: the host closes it.
  host.addHook('onClose', () => store.close())
  t.after(() => host.close())
  await host.register(plantStore, { tokens: [TOKEN], store })
  await host.ready()
  const create = () => host.inject({ method: 'POST', url: '/plants', headers: JSON_BODY, payload: '{"id":-9223372036854775808,"name":"Fern"}' })
  assert.equal((await create()).statusCode, 200)
  assert.deepEqual(await store.get(-(2n ** 63n)), { name: 'Fern' })
  const duplicate = await create()
  assert.equal(duplicate.statusCode, 409)
  assert.deepEqual(duplicate.json(), { error: 409, message: 'A plant with this id already exists' })
  store.reachable = false
  const down = await host.inject({ url: '/plants/1', headers: AUTH })
  assert.equal(down.statusCode, 503)
  assert.equal(down.json().error, 503)
  assert.equal((await host.inject({ url: '/readyz' })).statusCode, 503)
})
