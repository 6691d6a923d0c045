import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildHost } from '../src/app.js'
import { AUTH, JSON_BODY, newDatabase, TOKEN } from './helpers.js'

test('the README example serves plants on a real socket, on PostgreSQL, beside the host\'s routes', async (t) => {
  const database = await newDatabase(t)
  if (database === undefined) return
  process.env.API_TOKENS = TOKEN
  process.env.DATABASE_URL = database
  const app = await buildHost()
  t.after(() => app.close())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })

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
  assert.equal((await fetch(`${base}/garden/readyz`)).status, 200)

  assert.deepEqual(await (await fetch(`${base}/hello`)).json(), { hello: 'world' })
  const ui = await fetch(`${base}/documentation/`)
  assert.equal(ui.status, 200)
  assert.match(await ui.text(), /swagger-ui/i)
  const doc = await (await fetch(`${base}/documentation/json`)).json()
  assert.equal(doc.openapi, '3.1.0')
  assert.ok(doc.paths['/garden/plants'].post, 'the plant routes are in the host\'s document')
  assert.deepEqual(doc.paths['/garden/plants'].post.security, [{ bearerAuth: [] }])
  assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer')
  for (const name of Object.keys(doc.components.schemas)) assert.doesNotMatch(name, /^def-\d+$/, 'readable component names')
})

test('without tokens the README example refuses to start, naming the option', async () => {
  delete process.env.API_TOKENS
  process.env.DATABASE_URL = 'memory:'
  await assert.rejects(buildHost(), /^PlantStoreOptionsError: plant-store: option tokens is invalid/)
})
