import assert from 'node:assert/strict'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { pathToFileURL } from 'node:url'
import rateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'
import plantStore, { openapiTags, securitySchemes, type PlantStoreOptions } from 'plant-store'
import { AUTH, TOKEN } from './helpers.js'

// What a host sees when it shares a prefix, its errors, its limiter and its names with plant-store (issue 17).
const options = { tokens: [TOKEN], store: 'memory:' }

test('17.2: a host scope at /api/v1 with its own 404 handler, and plant-store at /api/v1, both work', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(async (api) => {
    api.setNotFoundHandler((_request, reply) => reply.code(404).send({ hostNotFound: true }))
    api.get('/orders', async () => [])
  }, { prefix: '/api/v1' })
  await host.register(plantStore, { ...options, prefix: '/api/v1' })
  await host.ready()
  assert.deepEqual((await host.inject({ url: '/api/v1/orderz' })).json(), { hostNotFound: true })
  assert.equal((await host.inject({ url: '/api/v1/plants', headers: AUTH })).statusCode, 200)
})

test('17.2: a clash with a host route fails at once, naming plant-store and the option', async () => {
  const host = Fastify()
  host.get('/api/v1/healthz', async () => 'host')
  await assert.rejects(async () => {
    await host.register(plantStore, { ...options, prefix: '/api/v1' })
    await host.ready()
  }, /^PlantStoreOptionsError: plant-store: GET \/api\/v1\/healthz is declared already by the host: set the option health: false/)
  await host.close()
})

test('17.6 and 17.7: the host\'s 503 and its global limiter\'s 429 reach its error handler; the probes are never limited', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  const seen: number[] = []
  let maintenance = false
  host.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
    seen.push(error.statusCode ?? 500)
    return reply.code(error.statusCode ?? 500).send({ failed: error.message })
  })
  await host.register(rateLimit, { max: 2, timeWindow: 60_000 })
  host.addHook('onRequest', async (request) => {
    if (maintenance && request.url.includes('/plants')) throw Object.assign(new Error('Maintenance'), { statusCode: 503 })
  })
  await host.register(plantStore, { ...options, prefix: '/api' })
  await host.ready()
  for (let n = 0; n < 4; n++) assert.equal((await host.inject({ url: '/api/healthz' })).statusCode, 200, 'probes: never 429')
  const statuses = []
  for (let n = 0; n < 3; n++) statuses.push((await host.inject({ url: '/api/plants', headers: AUTH })).statusCode)
  assert.deepEqual(statuses, [200, 200, 429])
  maintenance = true
  const down = await host.inject({ url: '/api/plants', headers: AUTH, remoteAddress: '10.0.0.9' })
  assert.deepEqual([down.statusCode, down.json()], [503, { failed: 'Maintenance' }])
  assert.deepEqual(seen, [429, 503])
})

test('17.7: with both limits on, the plugin\'s wins on the plant routes, with its own headers', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(rateLimit, { max: 3, timeWindow: 60_000 })
  await host.register(plantStore, { ...options, rateLimit: { max: 10, timeWindow: 60_000 } })
  await host.ready()
  for (let n = 1; n <= 11; n++) {
    const answer = await host.inject({ url: '/plants', headers: AUTH })
    assert.equal(answer.statusCode, n <= 10 ? 200 : 429)
    assert.equal(answer.headers['x-ratelimit-limit'], '10')
  }
})

test('17.5: the plugin\'s names are its own: no bearerAuth, no plants or health tag to clash with the host\'s', () => {
  assert.deepEqual(Object.keys(securitySchemes), ['plantStoreToken'])
  const hostSchemes = { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
  assert.equal(Object.keys({ ...hostSchemes, ...securitySchemes }).length, 2, 'both spread into one document')
  assert.deepEqual(openapiTags.map(({ name }) => name), ['plant-store.plants', 'plant-store.health'])
  assert.doesNotMatch(JSON.stringify(securitySchemes), /API_TOKENS/)
})

test('17.8: a misspelled option is refused, naming it', async () => {
  const host = Fastify()
  await assert.rejects(async () => {
    await host.register(plantStore, { ...options, tokenz: ['x'] } as PlantStoreOptions)
    await host.ready()
  }, /plant-store: option tokenz is unknown: the options are tokens, /)
  await host.close()
})

test('17.8: optional options take undefined (exactOptionalPropertyTypes), and the 415 message is the plugin\'s own', async (t) => {
  const fromEnvironment = (name: string) => process.env[name] === undefined ? undefined : Number(process.env[name])
  const host = Fastify()
  t.after(() => host.close())
  // Type-checked under exactOptionalPropertyTypes: TS2375 before.
  await host.register(plantStore, { ...options, bodyLimit: fromEnvironment('NO_SUCH_LIMIT'), pressure: { retryAfter: undefined } })
  const refused = await host.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'text/plain' }, payload: '{}' })
  assert.deepEqual(refused.json(), { error: 415, message: 'Content-Type must be application/json' }, 'the same on every Fastify 5')
})

test('15.3: wrong tokens are throttled per address, 429 with Retry-After; a valid token never is', async (t) => {
  const host = Fastify()
  t.after(() => host.close())
  await host.register(plantStore, { ...options, authFailureLimit: { max: 3, timeWindow: 60_000 } })
  for (let n = 0; n < 3; n++) assert.equal((await host.inject({ url: '/plants', headers: { authorization: `Bearer guess-${n}` } })).statusCode, 401)
  const throttled = await host.inject({ url: '/plants', headers: { authorization: 'Bearer guess-3' } })
  assert.equal(throttled.statusCode, 429)
  assert.ok(Number(throttled.headers['retry-after']) > 0)
  assert.equal((await host.inject({ url: '/plants', headers: AUTH })).statusCode, 200, 'the valid token from the same address')
})

test('17.9: a better-sqlite3 of another major is refused at registration, saying what to install', async (t) => {
  // A copy of the installed plant-store beside a better-sqlite3 14 (no Node line runs it), under
  // this host's node_modules.
  const require = createRequire(import.meta.url)
  const installed = dirname(require.resolve('plant-store/package.json'))
  const root = mkdtempSync(join(process.cwd(), 'driver-check-'))
  t.after(() => rmSync(root, { recursive: true, force: true }))
  cpSync(installed, join(root, 'node_modules/plant-store'), { recursive: true })
  mkdirSync(join(root, 'node_modules/better-sqlite3'))
  writeFileSync(join(root, 'node_modules/better-sqlite3/package.json'),
    JSON.stringify({ name: 'better-sqlite3', version: '14.0.0', engines: { node: '>=24' }, main: 'segfault.js' }))
  const copy = await import(pathToFileURL(join(root, 'node_modules/plant-store/dist/src/plugin.js')).href) as { default: typeof plantStore }
  const host = Fastify()
  await assert.rejects(async () => {
    await host.register(copy.default, { ...options, store: 'sqlite:./plants.db' })
    await host.ready()
  }, /better-sqlite3 14\.0\.0 is installed \(.*, which needs Node >=24; this is Node [\d.]+\) but plant-store works with better-sqlite3 (12|13|12 or 13)( on Node [\d.]+)?: npm install better-sqlite3@1[23]/)
  await host.close()
})
