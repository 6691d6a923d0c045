import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildHost } from '../src/app.js'
import { newDatabase, TOKEN } from './helpers.js'

test('the host example docs/plugin.md shows serves plants on a real socket, on PostgreSQL, behind the host\'s JWT, beside the host\'s routes', async (t) => {
  const database = await newDatabase(t)
  if (database === undefined) return
  process.env.DATABASE_URL = database
  const app = await buildHost()
  t.after(() => app.close())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  // Issue 17.1: the host's JWT got 401 error="invalid_token" on the plant routes.
  const AUTH = { authorization: `Bearer ${app.jwt.sign({ sub: 'ada' })}` }
  const JSON_BODY = { ...AUTH, 'content-type': 'application/json' }

  const created = await fetch(`${base}/garden/plants`, {
    method: 'POST', headers: JSON_BODY, body: '{"id":9223372036854775807,"name":"Monstera","tag":"tropical"}'
  })
  assert.equal(created.status, 200)
  assert.deepEqual(await created.json(), { name: 'Monstera', tag: 'tropical' })
  const listed = await fetch(`${base}/garden/plants`, { headers: AUTH })
  assert.equal(await listed.text(), '[{"id":9223372036854775807,"name":"Monstera","tag":"tropical"}]', 'the id is exact on the wire')
  const again = await fetch(`${base}/garden/plants`, { method: 'POST', headers: JSON_BODY, body: '{"id":9223372036854775807,"name":"Other"}' })
  assert.equal(again.status, 409)
  assert.deepEqual(await again.json(), { error: 409, message: 'A plant with this id already exists' })
  const anonymous = await fetch(`${base}/garden/plants`)
  assert.equal(anonymous.status, 401)
  const pluginToken = await fetch(`${base}/garden/plants`, { headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(pluginToken.status, 401, 'only the host\'s tokens')
  assert.equal(pluginToken.headers.get('www-authenticate'), null)
  const ada = await fetch(`${base}/garden/plants`, { headers: AUTH })
  const grace = await fetch(`${base}/garden/plants`, { headers: { authorization: `Bearer ${app.jwt.sign({ sub: 'grace' })}` } })
  assert.equal(Number(grace.headers.get('x-ratelimit-remaining')), 99, 'the rate limit counts each JWT subject apart')
  assert.ok(Number(ada.headers.get('x-ratelimit-remaining')) < 99)
  assert.equal((await fetch(`${base}/garden/readyz`)).status, 200)

  assert.deepEqual(await (await fetch(`${base}/hello`)).json(), { hello: 'world' })
  const ui = await fetch(`${base}/documentation/`)
  assert.equal(ui.status, 200)
  assert.match(await ui.text(), /swagger-ui/i)
  const doc = await (await fetch(`${base}/documentation/json`)).json()
  assert.equal(doc.openapi, '3.1.0')
  assert.ok(doc.paths['/garden/plants'].post, 'the plant routes are in the host\'s document')
  assert.deepEqual(doc.paths['/garden/plants'].post.security, [{ bearerAuth: [] }], 'the host\'s scheme')
  assert.deepEqual(Object.keys(doc.components.securitySchemes), ['bearerAuth'], 'one Authorize box, one kind of token')
  assert.deepEqual(doc.paths['/garden/plants'].post.tags, ['garden'])
  assert.deepEqual(doc.tags.map(({ name }: { name: string }) => name), ['garden', 'garden-health'])
  for (const name of Object.keys(doc.components.schemas)) assert.doesNotMatch(name, /^def-\d+$/, 'readable component names')
  assert.deepEqual(Object.keys(doc.webhooks), ['/plant/webhook', '/plant/deleted', '/plant/updated'], 'the plant events, as the plugin describes them')
  assert.equal(doc.webhooks['/plant/webhook'].post.operationId, 'plantCreated')
})
