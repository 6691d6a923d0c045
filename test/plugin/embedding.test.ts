import { existsSync } from 'node:fs'
import { join } from 'node:path'
import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import plantStore, { securitySchemes, swaggerReferenceName } from '../../src/plugin.js'
import packageJson from '../../package.json' with { type: 'json' }
import { AUTH, JSON_TYPE, TOKEN } from '../helpers/plugin-app.js'

async function hostApp (t: Test) {
  const host = Fastify()
  // A host that documents the plant routes declares the security scheme they name.
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '2.0.0' }, components: { securitySchemes } }
  })
  host.setErrorHandler((error: Error, _request, reply) => reply.code(418).send({ hostError: error.message }))
  host.get('/host/hello', async () => ({ hello: 'world' }))
  host.post('/host/echo', {
    schema: { body: { type: 'object', properties: { count: { type: 'integer' } } } }
  }, async (request) => request.body)
  host.get('/host/fail', async () => { throw new Error('host failure') })
  const store = createMemoryStore()
  await host.register(plantStore, { prefix: '/store', tokens: [TOKEN], store })
  await host.ready()
  t.teardown(() => host.close())
  return { host, store }
}

t.test('the package exports the plugin as its default', async (t) => {
  t.equal(packageJson.exports['.'].default, './dist/src/plugin.js')
  t.equal(packageJson.exports['.'].types, './dist/src/plugin.d.ts')
  t.type(plantStore, 'function')
})

t.test('embedded under a prefix, the plant routes work with a token', async (t) => {
  const { host, store } = await hostApp(t)
  const created = await host.inject({
    method: 'POST',
    url: '/store/plants',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    payload: '{"id":9223372036854775807,"name":"Basil"}'
  })
  t.equal(created.statusCode, 200)
  t.same(created.json(), { name: 'Basil' })
  t.same(await store.get(9223372036854775807n), { name: 'Basil' })
  const anonymous = await host.inject({ method: 'POST', url: '/store/plants', payload: { id: 1, name: 'x' } })
  t.equal(anonymous.statusCode, 401)
  t.same(anonymous.json(), { error: 401, message: 'A valid bearer token is required' })
  const ready = await host.inject({ url: '/store/readyz' })
  t.equal(ready.statusCode, 200)
})

t.test('host routes answer without a token and keep the host\'s own behaviour', async (t) => {
  const { host } = await hostApp(t)
  const hello = await host.inject({ url: '/host/hello' })
  t.equal(hello.statusCode, 200)
  t.same(hello.json(), { hello: 'world' })
  const failure = await host.inject({ url: '/host/fail' })
  t.equal(failure.statusCode, 418, 'the host error handler answers host errors')
  t.same(failure.json(), { hostError: 'host failure' })
  const coerced = await host.inject({ method: 'POST', url: '/host/echo', payload: { count: '5' } })
  t.equal(coerced.statusCode, 200, 'the host keeps Fastify\'s coercing validation')
  t.same(coerced.json(), { count: 5 })
  const text = await host.inject({ method: 'POST', url: '/host/echo', headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.not(text.statusCode, 415, 'the host keeps its own body parsers')
  const unknown = await host.inject({ url: '/host/nope' })
  t.equal(unknown.statusCode, 404)
  t.not(unknown.json().error, 404, 'unknown host routes get the host\'s 404, not the plugin\'s')
})

t.test('unknown routes under the plugin\'s prefix are the host\'s, or the plugin\'s with notFound: true', async (t) => {
  const { host } = await hostApp(t)
  const response = await host.inject({ url: '/store/nope' })
  t.equal(response.statusCode, 404)
  t.not(response.json().error, 404, 'the host\'s 404 by default')
  const claimed = Fastify()
  t.teardown(() => claimed.close())
  await claimed.register(plantStore, { prefix: '/store', tokens: [TOKEN], store: 'memory:', notFound: true })
  for (const url of ['/store/nope', '/store', '/store/']) {
    const answer = await claimed.inject({ url })
    t.equal(answer.statusCode, 404, url)
    t.same(answer.json(), { error: 404, message: 'Route not found' }, `${url}: the plugin's`)
  }
  t.equal((await claimed.inject({ method: 'PATCH', url: '/store/plants', headers: AUTH })).statusCode, 405, 'a method a route lacks')
  t.equal((await claimed.inject({ url: '/store/plants', headers: AUTH })).statusCode, 200, 'its own routes still answer')
})

t.test('the plant routes appear in the host\'s OpenAPI document', async (t) => {
  const { host } = await hostApp(t)
  const doc = host.swagger() as any
  t.ok(doc.paths['/store/plants']?.post, 'POST /store/plants is documented')
  t.same(doc.paths['/store/plants'].post.security, [{ plantStoreToken: [] }], 'a namespaced scheme name by default')
  t.ok(doc.paths['/host/hello'], 'host routes are documented too')
  const bodyRef: string = doc.paths['/store/plants'].post.requestBody.content['application/json'].schema.$ref
  const body = doc.components.schemas[bodyRef.replace('#/components/schemas/', '')]
  t.match(body, { required: ['id', 'name'], properties: { id: { type: 'integer', format: 'int64' } } }, 'with the NewPlant schema')
})

t.test('given a store URL, the plugin opens the store and closes it with the host', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const host = Fastify()
  await host.register(plantStore, { tokens: [TOKEN], store: `sqlite:${file}` })
  const created = await host.inject({
    method: 'POST', url: '/plants', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"id":1,"name":"n"}'
  })
  t.equal(created.statusCode, 200)
  await host.close()
  t.ok(existsSync(file), 'the SQLite file was created')
  t.notOk(existsSync(`${file}-wal`), 'and closed cleanly with the host')
})

t.test('a host with its own Error, Plant and HealthStatus schemas can register the plugin, and keeps its own', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '2.0.0' }, components: { securitySchemes } },
    // The README's option: every shared schema is named by its $id in the host's document.
    refResolver: { buildLocalReference: (json) => json.$id as string }
  })
  host.addSchema({ $id: 'Error', type: 'object', properties: { code: { type: 'string' } }, required: ['code'] })
  host.addSchema({ $id: 'Plant', type: 'object', properties: { species: { type: 'string' } } })
  host.addSchema({ $id: 'HealthStatus', type: 'object', properties: { up: { type: 'boolean' } } })
  host.get('/host/failure', {
    schema: { response: { 500: { $ref: 'Error#' } } }
  }, async (_request, reply) => reply.code(500).send({ code: 'HOST', extra: 'dropped by the host serializer' }))
  await host.register(plantStore, { prefix: '/store', tokens: [TOKEN], store: createMemoryStore() })
  await host.ready()

  const created = await host.inject({
    method: 'POST', url: '/store/plants', headers: { authorization: `Bearer ${TOKEN}` }, payload: { id: 1, name: 'Fern' }
  })
  t.equal(created.statusCode, 200)
  t.same(created.json(), { name: 'Fern' })
  const refused = await host.inject({ method: 'POST', url: '/store/plants', payload: { id: 1, name: 'Fern' } })
  t.same(refused.json(), { error: 401, message: 'A valid bearer token is required' }, 'the plugin answers in its own Error shape')
  const hostFailure = await host.inject({ url: '/host/failure' })
  t.same(hostFailure.json(), { code: 'HOST' }, 'the host serializes with its own Error schema')

  const doc = host.swagger() as any
  const names = Object.keys(doc.components.schemas)
  for (const name of ['Error', 'Plant', 'HealthStatus']) t.ok(names.includes(name), `the host's ${name} is kept`)
  t.same(doc.components.schemas.Error.required, ['code'])
  for (const name of ['plant-store.Error', 'plant-store.Plant', 'plant-store.NewPlant', 'plant-store.PlantList', 'plant-store.HealthStatus']) {
    t.ok(names.includes(name), `the plugin's ${name} has a readable name of its own`)
  }
  t.same(doc.paths['/store/plants'].post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/plant-store.NewPlant' })
  t.same(doc.paths['/host/failure'].get.responses['500'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
})

t.test('two instances under two prefixes have distinct operationIds, derived from the prefix', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'Host', version: '2.0.0' }, components: { securitySchemes } } })
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: createMemoryStore() })
  await host.register(async (api) => {
    await api.register(plantStore, { prefix: '/green-house', tokens: [TOKEN], store: createMemoryStore() })
  }, { prefix: '/api/v2' })
  await host.ready()

  const doc = host.swagger() as any
  const operationIds = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.values(operations as Record<string, { operationId: string }>).map(({ operationId }) => `${path} ${operationId}`))
  t.same(operationIds.sort(), [
    '/api/v2/green-house/healthz apiV2GreenHouseGetHealth',
    '/api/v2/green-house/plants apiV2GreenHouseCreatePlant',
    '/api/v2/green-house/plants apiV2GreenHouseListPlants',
    '/api/v2/green-house/plants/changes apiV2GreenHouseListChanges',
    '/api/v2/green-house/plants/{id} apiV2GreenHouseDeletePlant',
    '/api/v2/green-house/plants/{id} apiV2GreenHouseGetPlant',
    '/api/v2/green-house/plants/{id} apiV2GreenHouseUpdatePlant',
    '/api/v2/green-house/readyz apiV2GreenHouseGetReadiness',
    '/garden/healthz gardenGetHealth',
    '/garden/plants gardenCreatePlant',
    '/garden/plants gardenListPlants',
    '/garden/plants/changes gardenListChanges',
    '/garden/plants/{id} gardenDeletePlant',
    '/garden/plants/{id} gardenGetPlant',
    '/garden/plants/{id} gardenUpdatePlant',
    '/garden/readyz gardenGetReadiness'
  ])
  // Both instances answer, each with its own store.
  const auth = { authorization: `Bearer ${TOKEN}` }
  t.equal((await host.inject({ method: 'POST', url: '/garden/plants', headers: auth, payload: { id: 1, name: 'a' } })).statusCode, 200)
  t.equal((await host.inject({ method: 'POST', url: '/api/v2/green-house/plants', headers: auth, payload: { id: 1, name: 'b' } })).statusCode, 200)
  t.same((await host.inject({ url: '/api/v2/green-house/plants/1', headers: auth })).json(), { name: 'b' })
})

t.test('two instances with different text limits each document their own in the host\'s document', async (t) => {
  const host = Fastify()
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '2.0.0' }, components: { securitySchemes } },
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: createMemoryStore() })
  await host.register(plantStore, { prefix: '/v2', tokens: [TOKEN], store: createMemoryStore(), maxTextLength: 10 })
  await host.ready()
  t.teardown(() => host.close())
  const doc = host.swagger() as any
  const bodyOf = (path: string) => {
    const ref: string = doc.paths[path].post.requestBody.content['application/json'].schema.$ref
    return doc.components.schemas[ref.replace('#/components/schemas/', '')]
  }
  t.equal(bodyOf('/garden/plants').properties.name.maxLength, 1000)
  t.equal(bodyOf('/v2/plants').properties.name.maxLength, 10, 'the /v2 body declares its own limit')
  const tooLong = await host.inject({
    method: 'POST', url: '/v2/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: { id: 1, name: 'eleven char' }
  })
  t.equal(tooLong.statusCode, 400, 'and enforces it')
  const fine = await host.inject({
    method: 'POST', url: '/garden/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: { id: 1, name: 'eleven char' }
  })
  t.equal(fine.statusCode, 200)
})

t.test('apps built one after another in one process, as a host\'s tests build them, each enforce their own text limit', async (t) => {
  // The validators compiled for one limit are shared by the apps of that limit only (plugins/http/validation.ts).
  for (const [maxTextLength, status] of [[10, 400], [1000, 200], [10, 400], [11, 200]] as const) {
    const host = Fastify()
    await host.register(plantStore, { tokens: [TOKEN], store: createMemoryStore(), maxTextLength })
    const answer = await host.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: { id: 1, name: 'eleven char' } })
    t.equal(answer.statusCode, status, `limit ${maxTextLength}: an 11-character name answered ${status}`)
    await host.close()
  }
})
