import t from 'tap'
import { AUTH, buildPlugin, createPlant } from '../helpers/plugin-app.js'

t.test('GET /plants/{id} answers the Plant without its id, exact past 2^53', async (t) => {
  const { app } = await buildPlugin(t)
  await createPlant(app, '{"id":9007199254740993,"name":"Agave","tag":"succulent"}')
  const response = await app.inject({ url: '/plants/9007199254740993', headers: AUTH })
  t.equal(response.statusCode, 200)
  t.equal(response.body, '{"name":"Agave","tag":"succulent"}')
  const neighbour = await app.inject({ url: '/plants/9007199254740992', headers: AUTH })
  t.equal(neighbour.statusCode, 404, 'the id next to it is not the same plant')
  t.same(neighbour.json(), { error: 404, message: 'No plant has this id' })
})

t.test('a bad id in a path is 400 in the Error shape', async (t) => {
  const { app } = await buildPlugin(t)
  for (const id of ['abc', '1.5', '9223372036854775808', '-9223372036854775809', '1e3', '%20']) {
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await app.inject({ method, url: `/plants/${id}`, headers: AUTH })
      t.equal(response.statusCode, 400, `${method} ${id}`)
      t.same(response.json(), {
        error: 400, message: 'params/id must be an integer from -9223372036854775808 to 9223372036854775807'
      })
    }
  }
})

t.test('GET /plants lists in ascending numeric id order with exact ids, a page at a time', async (t) => {
  const { app } = await buildPlugin(t)
  const ids = ['9223372036854775807', '-9223372036854775808', '10', '2', '-5', '9007199254740993']
  for (const id of ids) await createPlant(app, `{"id":${id},"name":"p${id}"}`)
  const all = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(all.statusCode, 200)
  t.equal(all.body, '[' + ['-9223372036854775808', '-5', '2', '10', '9007199254740993', '9223372036854775807']
    .map((id) => `{"id":${id},"name":"p${id}"}`).join(',') + ']', 'ids are exact JSON integers')

  const first = await app.inject({ url: '/plants?limit=2', headers: AUTH })
  t.same(first.json().map((plant: { name: string }) => plant.name), ['p-9223372036854775808', 'p-5'])
  const next = await app.inject({ url: '/plants?limit=3&after=-5', headers: AUTH })
  t.same(next.json().map((plant: { name: string }) => plant.name), ['p2', 'p10', 'p9007199254740993'])
  const last = await app.inject({ url: '/plants?after=9223372036854775807', headers: AUTH })
  t.same(last.json(), [])
})

t.test('GET /plants returns 100 plants by default and at most 1000', async (t) => {
  const { app } = await buildPlugin(t)
  for (let id = 0; id < 1005; id++) await createPlant(app, { id, name: 'n' })
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).json().length, 100)
  t.equal((await app.inject({ url: '/plants?limit=1000', headers: AUTH })).json().length, 1000)
})

t.test('a bad query is 400 in the Error shape', async (t) => {
  const { app } = await buildPlugin(t)
  const LIMIT = 'querystring/limit must be an integer from 1 to 1000'
  const AFTER = 'querystring/after must be an integer from -9223372036854775808 to 9223372036854775807'
  const cases: Record<string, string> = {
    'limit=0': LIMIT,
    'limit=1001': LIMIT,
    'limit=abc': LIMIT,
    'limit=1.5': LIMIT,
    // limit is as strict as after: decimal digits only, whatever JavaScript's Number() would read.
    'limit=1e2': LIMIT,
    'limit=0x10': LIMIT,
    'limit=%2B5': LIMIT,
    'limit=%205': LIMIT,
    'limit=5.0': LIMIT,
    'limit=': LIMIT,
    'limit=5&limit=6': LIMIT,
    'after=x': AFTER,
    'after=1e2': AFTER,
    'after=0x10': AFTER,
    'after=9223372036854775808': AFTER
  }
  for (const [query, message] of Object.entries(cases)) {
    const response = await app.inject({ url: `/plants?${query}`, headers: AUTH })
    t.equal(response.statusCode, 400, query)
    t.same(response.json(), { error: 400, message }, query)
  }
})

t.test('limit and after in decimal digits are read as the integers they spell', async (t) => {
  const { app } = await buildPlugin(t)
  for (let id = 1; id <= 5; id++) await createPlant(app, { id, name: `p${id}` })
  const names = async (query: string) =>
    (await app.inject({ url: `/plants?${query}`, headers: AUTH })).json().map((plant: { name: string }) => plant.name)
  t.same(await names('limit=2'), ['p1', 'p2'])
  t.same(await names('limit=0002&after=-0'), ['p1', 'p2'], 'leading zeros and -0 are decimal digits too')
  t.same(await names('limit=1000&after=3'), ['p4', 'p5'])
})

t.test('DELETE /plants/{id} answers 204, then 404, and the id can be created again', async (t) => {
  const { app, store } = await buildPlugin(t)
  await createPlant(app, { id: 3, name: 'old' })
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/3', headers: AUTH })
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  t.equal(await store.get(3n), undefined)
  const again = await app.inject({ method: 'DELETE', url: '/plants/3', headers: AUTH })
  t.equal(again.statusCode, 404)
  t.same(again.json(), { error: 404, message: 'No plant has this id' })
  t.equal((await createPlant(app, { id: 3, name: 'new' })).statusCode, 200)
  t.same(await store.get(3n), { name: 'new' })
})

t.test('GET and DELETE /plants/ (an empty id) are the host\'s 404, not a 400 about params/id', async (t) => {
  const { app } = await buildPlugin(t)
  for (const method of ['GET', 'DELETE'] as const) {
    const response = await app.inject({ method, url: '/plants/', headers: AUTH })
    t.equal(response.statusCode, 404, method)
    t.match(response.json(), { statusCode: 404, error: 'Not Found' }, `${method}: Fastify's 404, the host's own`)
  }
  t.same((await app.inject({ url: '/plants/1', headers: AUTH })).json(), { error: 404, message: 'No plant has this id' }, 'an id still reaches its route')
})
