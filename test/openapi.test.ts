import t from 'tap'
import { build } from './helpers/app.js'

t.test('the OpenAPI document describes the service as SPEC.md does', async (t) => {
  const { app } = await build(t)
  const response = await app.inject({ url: '/documentation/json' })
  t.equal(response.statusCode, 200)
  const doc = response.json()
  t.equal(doc.openapi, '3.1.0')
  t.match(doc.info, { version: '1.0.0', license: { name: 'MIT' } })
  t.match(doc.components.securitySchemes, { bearerAuth: { type: 'http', scheme: 'bearer' } })

  const { Plant, NewPlant, Error: ErrorSchema } = doc.components.schemas
  t.same(Plant.required, ['name'])
  t.same(Object.keys(Plant.properties), ['name', 'tag'])
  t.same(NewPlant.required, ['id', 'name'])
  t.match(NewPlant.properties, { id: { type: 'integer', format: 'int64' }, name: { type: 'string' }, tag: { type: 'string' } })
  t.same(ErrorSchema.required, ['error', 'message'])
  t.match(ErrorSchema.properties, { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } })
  t.notOk(Object.keys(doc.components.schemas).some((name) => name.startsWith('def-')), 'no anonymous def-N names')

  const create = doc.paths['/plants'].post
  t.same(create.security, [{ bearerAuth: [] }])
  t.equal(create.requestBody.required, true)
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPlant' })
  t.same(create.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Plant' })
  for (const status of ['400', '401', '409', '413', '415', '503']) {
    t.same(create.responses[status].content['application/json'].schema, { $ref: '#/components/schemas/Error' }, status)
  }
})

t.test('the read, list and delete routes are documented with exact int64 ids', async (t) => {
  const { app } = await build(t)
  const doc = (await app.inject({ url: '/documentation/json' })).json()
  const read = doc.paths['/plants/{id}'].get
  t.match(read.parameters, [{ in: 'path', name: 'id', required: true, schema: { type: 'integer', format: 'int64' } }])
  t.same(read.security, [{ bearerAuth: [] }])
  t.ok(doc.paths['/plants/{id}'].delete.responses['204'])
  const list = doc.paths['/plants'].get
  t.same(list.parameters.map((parameter: { name: string }) => parameter.name).sort(), ['after', 'limit'])
  t.same(doc.components.schemas.PlantList.items, { $ref: '#/components/schemas/NewPlant' })
})

t.test('Swagger UI is served with every asset from the service itself', async (t) => {
  const { app } = await build(t)
  const page = await app.inject({ url: '/documentation' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1])
  t.ok(assets.length >= 4, 'the page loads scripts and styles')
  for (const asset of assets) {
    t.match(asset, /^\/documentation\/static\//, `${asset} is local`)
    t.equal((await app.inject({ url: asset })).statusCode, 200, `${asset} is served`)
  }
  const initializer = await app.inject({ url: '/documentation/static/swagger-initializer.js' })
  t.match(initializer.body, /"persistAuthorization":true/, 'Authorize keeps the token across reloads')
  t.match(initializer.body, /validatorUrl: null/, 'no call to the online validator')
})
