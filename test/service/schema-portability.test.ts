import { Ajv2020 } from 'ajv/dist/2020.js'
import t from 'tap'
import { ROUTE_NOT_FOUND } from '../../plugins/http/error-handler.js'
import { AUTH, build, JSON_TYPE } from '../helpers/app.js'

// An emoji is a surrogate pair: one code point to an engine with the `u` flag, two code units without it.
const EMOJI_NAME = 'Fern 🌿'

t.test('a stored emoji name passes the document\'s own schema in an engine without the u flag', async (t) => {
  const { app } = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const created = await fetch(`${origin}/plants`, {
    method: 'POST', headers: { ...AUTH, ...JSON_TYPE }, body: JSON.stringify({ id: 1, name: EMOJI_NAME, tag: '🪴' })
  })
  t.equal(created.status, 200)
  const listed = await (await fetch(`${origin}/plants`, { headers: AUTH })).json()
  const doc = await (await fetch(`${origin}/documentation/json`)).json() as { components: { schemas: Record<string, any> } }

  const { pattern } = doc.components.schemas.Plant.properties.name
  const withU = new RegExp(pattern, 'u')
  const withoutU = new RegExp(pattern)
  const samples = [EMOJI_NAME, '', 'Monstera', '\u0000', '\ud800', '\udc00', 'a\ud83cb', '\udf3f\ud83c', '🌿🪴', '\ud83c\udf3f\ud800']
  for (const sample of samples) {
    t.equal(withoutU.test(sample), withU.test(sample), `${JSON.stringify(sample)}: the same with and without the u flag`)
  }
  t.ok(withoutU.test(EMOJI_NAME), 'the stored emoji name matches without the u flag')

  // A validator as Postman's or tv4 use it: no u flag on patterns.
  const ajv = new Ajv2020({ unicodeRegExp: false, strict: false })
  for (const [name, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema as object, `#/components/schemas/${name}`)
  const validList = ajv.compile({ $ref: '#/components/schemas/PlantList' })
  t.ok(validList(listed), `the listed plants are a valid PlantList: ${JSON.stringify(validList.errors)}`)
  const validPlant = ajv.compile({ $ref: '#/components/schemas/Plant' })
  t.ok(validPlant({ name: EMOJI_NAME }))
  t.notOk(validPlant({ name: '\ud800' }), 'an unpaired surrogate is still refused')
})

t.test('a list item has its own title and description, not NewPlant\'s "A plant to create"', async (t) => {
  const { app } = await build(t)
  const doc = (await app.inject({ url: '/documentation/json' })).json()
  t.match(doc.components.schemas.PlantList.items, { title: 'ListedPlant', description: 'A stored plant, with its id' })
})

t.test('GET and DELETE /plants/ (an empty id) are 404 in the Error shape, not a 400 about params/id', async (t) => {
  const { app } = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  for (const method of ['GET', 'DELETE']) {
    const response = await fetch(`${origin}/plants/`, { method, headers: AUTH })
    t.equal(response.status, 404, method)
    t.same(await response.json(), { error: 404, message: ROUTE_NOT_FOUND }, method)
  }
  t.equal((await fetch(`${origin}/plants/1`, { headers: AUTH })).status, 404, 'an id still reaches its route')
})
