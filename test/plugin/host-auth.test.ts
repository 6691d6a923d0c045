import swagger from '@fastify/swagger'
import Fastify, { type FastifyRequest } from 'fastify'
import t from 'tap'
import { UnauthenticatedError } from '../../plugins/http/errors.js'
import plantStore, { openapiDeclarations, openapiTags, securitySchemes } from '../../src/plugin.js'
import { TOKEN } from '../helpers/plugin-app.js'

// A host's own "JWT": `Bearer user:<name>`, checked by the host, unknown to the plugin.
const USERS = new Set(['ada', 'grace'])
const userOf = (request: FastifyRequest) => {
  const name = /^Bearer user:(\w+)$/.exec(request.headers.authorization ?? '')?.[1]
  return name !== undefined && USERS.has(name) ? name : false
}
const as = (name: string) => ({ authorization: `Bearer user:${name}` })
const JWT_SCHEME = { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } as const

async function hostWithJwt (options: Record<string, unknown> = {}) {
  const host = Fastify()
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '1.0.0' }, components: { securitySchemes: JWT_SCHEME }, security: [{ bearerAuth: [] }] }
  })
  host.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) =>
    reply.code(error.statusCode ?? 500).send({ hostError: error.message }))
  await host.register(plantStore, { prefix: '/api', store: 'memory:', authenticate: userOf, ...options })
  await host.ready()
  return host
}

// Reported: a host's JWT on a plant route got 401 error="invalid_token".
t.test('the host\'s authentication guards the plant routes: what it accepts passes, what it refuses is 401', async (t) => {
  const host = await hostWithJwt()
  t.teardown(() => host.close())
  const created = await host.inject({ method: 'POST', url: '/api/plants', headers: { ...as('ada'), 'content-type': 'application/json' }, payload: '{"id":1,"name":"Fern"}' })
  t.equal(created.statusCode, 200, 'the host\'s token is accepted')
  const refused = await host.inject({ url: '/api/plants', headers: as('mallory') })
  t.equal(refused.statusCode, 401)
  t.same(refused.json(), { error: 401, message: new UnauthenticatedError().message })
  t.equal(refused.headers['www-authenticate'], undefined, 'no plant-store challenge: the scheme is the host\'s')
  t.equal((await host.inject({ url: '/api/plants', headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, 401, 'no plugin tokens')
})

t.test('what authenticate throws is the host\'s own error, for the host\'s error handler; a wrong return is a 500', async (t) => {
  const host = await hostWithJwt({
    authenticate: (request: FastifyRequest) => {
      if (request.headers['x-expired'] !== undefined) throw Object.assign(new Error('Token expired'), { statusCode: 401 })
      return request.headers['x-odd'] !== undefined ? 42 as unknown as string : userOf(request)
    }
  })
  t.teardown(() => host.close())
  const expired = await host.inject({ url: '/api/plants', headers: { ...as('ada'), 'x-expired': '1' } })
  t.equal(expired.statusCode, 401)
  t.same(expired.json(), { hostError: 'Token expired' })
  const odd = await host.inject({ url: '/api/plants', headers: { ...as('ada'), 'x-odd': '1' } })
  t.equal(odd.statusCode, 500)
  t.match(odd.json().hostError, /option authenticate returned number: it must return a non-empty string/)
})

t.test('an authenticate that answers itself ends the request there', async (t) => {
  const host = await hostWithJwt({ authenticate: async (_request: FastifyRequest, reply: { code: (n: number) => { send: (b: unknown) => unknown } }) => { await reply.code(302).send('elsewhere'); return false } })
  t.teardown(() => host.close())
  const answer = await host.inject({ url: '/api/plants' })
  t.equal(answer.statusCode, 302)
  t.equal(answer.body, 'elsewhere')
})

t.test('the rate limit counts each identity the host\'s auth found, not one bucket for all', async (t) => {
  const host = await hostWithJwt({ rateLimit: { max: 2, timeWindow: 60_000 } })
  t.teardown(() => host.close())
  for (const status of [200, 200, 429]) t.equal((await host.inject({ url: '/api/plants', headers: as('ada') })).statusCode, status, `ada: ${status}`)
  const grace = await host.inject({ url: '/api/plants', headers: as('grace') })
  t.equal(grace.statusCode, 200, 'grace has her own budget')
  t.equal(grace.headers['x-ratelimit-remaining'], '1')
})

t.test('the document names the host\'s security scheme, or none (the document\'s own applies)', async (t) => {
  const named = await hostWithJwt({ openapi: { securityScheme: 'bearerAuth' } })
  t.teardown(() => named.close())
  const doc = named.swagger() as any
  t.same(doc.paths['/api/plants'].post.security, [{ bearerAuth: [] }])
  t.same(Object.keys(doc.components.securitySchemes), ['bearerAuth'], 'one scheme: the host\'s')
  t.match(doc.paths['/api/plants'].post.responses['401'].description, /host's authentication/)
  const unnamed = await hostWithJwt()
  t.teardown(() => unnamed.close())
  t.equal((unnamed.swagger() as any).paths['/api/plants'].post.security, undefined, 'the global security requirement applies')
})

// Reported: the scheme was bearerAuth and the tags plants/health, as a host's often are.
t.test('scheme and tag names are namespaced by default and set by the openapi option, with descriptions for a host', async (t) => {
  t.same(Object.keys(securitySchemes), ['plantStoreToken'])
  t.notMatch(JSON.stringify(securitySchemes), /API_TOKENS/, 'no talk of the standalone service\'s settings')
  t.same(openapiTags.map(({ name }) => name), ['plant-store.plants', 'plant-store.health'])
  const names = { securityScheme: 'gardenToken', plantsTag: 'garden', healthTag: 'garden-probes' }
  const declared = openapiDeclarations(names)
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Host', version: '1.0.0' },
      tags: [{ name: 'plants', description: 'the host\'s own' }, { name: 'health' }, ...declared.tags],
      components: { securitySchemes: { ...JWT_SCHEME, ...declared.securitySchemes } }
    }
  })
  host.get('/plants', { schema: { tags: ['plants'], security: [{ bearerAuth: [] }] } }, async () => [])
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: 'memory:', openapi: names })
  await host.ready()
  const doc = host.swagger() as any
  t.same(doc.paths['/garden/plants'].post.security, [{ gardenToken: [] }])
  t.same(doc.paths['/garden/plants'].post.tags, ['garden'])
  t.same(doc.paths['/garden/healthz'].get.tags, ['garden-probes'])
  t.same(doc.paths['/plants'].get.security, [{ bearerAuth: [] }], 'the host\'s routes keep the host\'s scheme')
  const tagNames = doc.tags.map(({ name }: { name: string }) => name)
  t.equal(new Set(tagNames).size, tagNames.length, `no duplicated tag names: ${tagNames.join(', ')}`)
})
