import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import plantStore, { PlantStoreOptionsError, securitySchemes, swaggerReferenceName } from '../../src/plugin.js'
import { TOKEN } from '../helpers/plugin-app.js'

/** Registers the plugin with `options` on a new host; resolves with the error it fails with, if any. */
async function registerWith (options: unknown) {
  const host = Fastify()
  try {
    await host.register(plantStore, options as never)
    await host.ready()
    return undefined
  } catch (error) {
    return error as Error
  } finally {
    await host.close()
  }
}

const valid = { tokens: [TOKEN], store: 'memory:' }

t.test('options that cannot work are refused at registration, with one line naming the option', async (t) => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['no options at all', {}, /^plant-store: option tokens is missing: it must be a non-empty array of accepted bearer tokens/],
    ['no store', { tokens: [TOKEN] }, /^plant-store: option store is missing: it must be a store URL \(memory:, sqlite:<path of a file>, postgres:\/\/…\) or an object implementing PlantStore/],
    ['no tokens', { store: 'memory:' }, /^plant-store: option tokens is missing/],
    ['an empty token list', { ...valid, tokens: [] }, /^plant-store: option tokens is invalid: it must be a non-empty array/],
    ['a token with a space', { ...valid, tokens: ['two words'] }, /^plant-store: option tokens is invalid/],
    ['a non-ASCII token', { ...valid, tokens: ['jeton-é'] }, /^plant-store: option tokens is invalid: .*visible ASCII/],
    ['an empty token', { ...valid, tokens: [''] }, /^plant-store: option tokens is invalid/],
    ['tokens as a string', { ...valid, tokens: TOKEN }, /^plant-store: option tokens is invalid/],
    ['an unknown store URL', { ...valid, store: 'mysql://db/plants' }, /^plant-store: option store is invalid: it must be a store URL/],
    ['SQLite in memory, which keeps nothing', { ...valid, store: 'sqlite::memory:' }, /^plant-store: option store is invalid: it must be a store URL \(memory:, sqlite:<path of a file>/],
    ['a store without its methods', { ...valid, store: { create () {} } }, /^plant-store: option store is invalid: .*\(create, get, list, delete, ping, close\)/],
    ['a body limit of 0', { ...valid, bodyLimit: 0 }, /^plant-store: option bodyLimit is invalid: it must be the largest request body in bytes, a positive integer/],
    ['a fractional body limit', { ...valid, bodyLimit: 1.5 }, /^plant-store: option bodyLimit is invalid/],
    ['a max text length of 0', { ...valid, maxTextLength: 0 }, /^plant-store: option maxTextLength is invalid: it must be the longest name or tag accepted/],
    ['health as a string', { ...valid, health: 'no' }, /^plant-store: option health is invalid: it must be true or false/],
    ['a negative pressure threshold', { ...valid, pressure: { maxEventLoopDelay: -1 } }, /^plant-store: option pressure.maxEventLoopDelay is invalid: it must be event-loop delay in ms/],
    ['an event-loop utilization above 1', { ...valid, pressure: { maxEventLoopUtilization: 5 } }, /^plant-store: option pressure.maxEventLoopUtilization is invalid: it must be event-loop utilization, 0 to 1/],
    ['a rate window past what a timer holds', { ...valid, rateLimit: { max: 1, timeWindow: 2 ** 31 } }, /^plant-store: option rateLimit.timeWindow is invalid: it must be the window in ms, a positive integer, at most 2147483647/],
    ['a rate limit without its window', { ...valid, rateLimit: { max: 5 } }, /^plant-store: option rateLimit.timeWindow is missing: it must be the window in ms/],
    ['wrapStore that is not a function', { ...valid, wrapStore: 'x' }, /^plant-store: option wrapStore is invalid: it must be a function/],
    // A misspelled option is refused, not ignored.
    ['a misspelled option', { ...valid, tokenz: [TOKEN] }, /^plant-store: option tokenz is unknown: the options are tokens, authenticate, store, /],
    ['a misspelled nested option', { ...valid, rateLimit: { max: 1, timeWindow: 1000, maxx: 2 } }, /^plant-store: option rateLimit.maxx is unknown: rateLimit takes max, timeWindow$/],
    ['both tokens and authenticate', { ...valid, authenticate: () => 'x' }, /^plant-store: options tokens and authenticate exclude each other/],
    ['authenticate that is not a function', { store: 'memory:', authenticate: 'jwt' }, /^plant-store: option authenticate is invalid: it must be a function \(request, reply\)/],
    ['hostErrors of another value', { ...valid, hostErrors: 'mine' }, /^plant-store: option hostErrors is invalid: it must be "host" or "plugin"/],
    ['notFound as a string', { ...valid, notFound: 'yes' }, /^plant-store: option notFound is invalid: it must be true or false/],
    ['a failure limit of 0', { ...valid, authFailureLimit: { max: 0, timeWindow: 1000 } }, /^plant-store: option authFailureLimit is invalid: it must be false, or \{ max, timeWindow \}/],
    ['a scheme name with a space', { ...valid, openapi: { securityScheme: 'my scheme' } }, /^plant-store: option openapi.securityScheme is invalid: it must be the name of the security scheme/],
    ['route config that is not an object', { ...valid, routeConfig: { health: 5 } }, /^plant-store: option routeConfig.health is invalid: it must be an object/]
  ]
  for (const [name, options, message] of cases) {
    const error = await registerWith(options)
    t.type(error, PlantStoreOptionsError, name)
    t.match(error?.message, message, name)
    t.notMatch(error?.message, /\n/, `${name}: one line`)
  }
})

t.test('valid options register, with a URL or a store object', async (t) => {
  t.equal(await registerWith(valid), undefined)
  t.equal(await registerWith({ ...valid, store: createMemoryStore(), health: false, bodyLimit: 10, pressure: {}, rateLimit: { max: 1, timeWindow: 1000 } }), undefined)
  // Undefined is absent, as the types say (a host with exactOptionalPropertyTypes may pass it).
  t.equal(await registerWith({ ...valid, bodyLimit: undefined, pressure: { retryAfter: undefined }, openapi: undefined }), undefined)
  t.equal(await registerWith({ ...valid, prefix: '/p', logLevel: 'warn', notFound: true, hostErrors: 'plugin', authFailureLimit: false }), undefined,
    'with Fastify\'s own register options')
})

t.test('the health routes are optional: a host with its own /healthz registers without a prefix', async (t) => {
  const host = Fastify()
  host.get('/healthz', async () => 'the host\'s own')
  await host.register(plantStore, { ...valid, health: false })
  await host.ready()
  t.teardown(() => host.close())
  t.equal((await host.inject({ url: '/healthz' })).body, 'the host\'s own')
  t.equal((await host.inject({ url: '/readyz' })).statusCode, 404)
  t.equal((await host.inject({ url: '/plants' })).statusCode, 401, 'the plant routes are there')
})

t.test('load shedding and the rate limit are registered only when asked for', async (t) => {
  const plain = Fastify()
  await plain.register(plantStore, valid)
  await plain.ready()
  t.teardown(() => plain.close())
  t.notMatch(plain.printPlugins(), /load-shedding|rate-limit/)

  const asked = Fastify()
  await asked.register(plantStore, { ...valid, pressure: { maxEventLoopDelay: 1000 }, rateLimit: { max: 1, timeWindow: 60_000 } })
  await asked.ready()
  t.teardown(() => asked.close())
  t.match(asked.printPlugins(), /plant-store-load-shedding/)
  t.match(asked.printPlugins(), /plant-store-rate-limit/)
  const headers = { authorization: `Bearer ${TOKEN}` }
  t.equal((await asked.inject({ url: '/plants', headers })).statusCode, 200)
  t.equal((await asked.inject({ url: '/plants', headers })).statusCode, 429)
})

t.test('swaggerReferenceName names a host document\'s components by their $id, others def-<n>', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '1.0.0' }, components: { securitySchemes } },
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  host.addSchema({ $id: 'HostThing', type: 'object', properties: { anonymous: { type: 'object', properties: { x: { type: 'string' } } } } })
  await host.register(plantStore, valid)
  await host.ready()
  const names = Object.keys((host.swagger() as { components: { schemas: object } }).components.schemas)
  t.ok(names.includes('HostThing'))
  for (const name of names) t.notMatch(name, /^def-/, `${name} is readable`)
  t.equal(swaggerReferenceName({}, undefined, '', 3), 'def-3')
})
