import t from 'tap'
import { INT64_MAX, INT64_MIN } from '../../schemas/index.js'
import { buildPlugin, createPlant, storedPlants } from '../helpers/plugin-app.js'

t.test('a valid NewPlant is stored and answered with the Plant, without its id', async (t) => {
  const { app, store } = await buildPlugin(t)
  const response = await createPlant(app, { id: 1, name: 'Monstera', tag: 'tropical' })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  t.same(response.json(), { name: 'Monstera', tag: 'tropical' })
  t.same(await storedPlants(store), [{ id: 1n, name: 'Monstera', tag: 'tropical' }])
})

t.test('a plant without a tag is answered and stored without one', async (t) => {
  const { app, store } = await buildPlugin(t)
  const response = await createPlant(app, { id: 2, name: 'Fern' })
  t.equal(response.statusCode, 200)
  t.equal(response.body, '{"name":"Fern"}')
  t.same(await store.get(2n), { name: 'Fern' })
})

t.test('empty strings are a valid name and tag', async (t) => {
  const { app } = await buildPlugin(t)
  const response = await createPlant(app, { id: 3, name: '', tag: '' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { name: '', tag: '' })
})

t.test('unknown properties are neither stored nor echoed', async (t) => {
  const { app, store } = await buildPlugin(t)
  const response = await createPlant(app, { id: 4, name: 'Aloe', color: 'green', nested: { a: 1 } })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { name: 'Aloe' })
  t.same(await store.get(4n), { name: 'Aloe' })
})

t.test('text outside the Basic Multilingual Plane is kept exactly', async (t) => {
  const { app, store } = await buildPlugin(t)
  const name = 'Cactus 🌵 «𝔉»'
  const response = await createPlant(app, { id: 5, name })
  t.equal(response.statusCode, 200)
  t.equal(response.json().name, name)
  t.equal((await store.get(5n))?.name, name)
})

t.test('a charset parameter on the content type is accepted', async (t) => {
  const { app } = await buildPlugin(t)
  const response = await createPlant(app, { id: 6, name: 'Ivy' }, { 'content-type': 'application/json; charset=utf-8' })
  t.equal(response.statusCode, 200)
})

t.test('ids keep every digit across the whole int64 range', async (t) => {
  const ids = [INT64_MIN, INT64_MAX, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 0n, 1234567890123456789n]
  const { app, store } = await buildPlugin(t)
  for (const id of ids) {
    const response = await createPlant(app, `{"id":${id},"name":"plant ${id}"}`)
    t.equal(response.statusCode, 200, `id ${id}`)
    t.same(await store.get(id), { name: `plant ${id}` }, `id ${id} stored exactly`)
  }
  t.same((await storedPlants(store)).map((plant) => plant.id), [...ids].sort((a, b) => (a < b ? -1 : 1)))
})

t.test('any spelling of an integral JSON number is that integer', async (t) => {
  const spellings: Array<[string, bigint]> = [
    ['1.0', 1n],
    ['1e3', 1000n],
    ['1E+3', 1000n],
    ['-0', 0n],
    ['12.50e1', 125n],
    ['0.000e5', 0n],
    ['9223372036854775807.000', INT64_MAX],
    ['922337203685477580.7e1', INT64_MAX],
    ['-9.223372036854775808e18', INT64_MIN],
    ['1234567890123456780e-1', 123456789012345678n]
  ]
  for (const [spelling, id] of spellings) {
    const { app, store } = await buildPlugin(t)
    const response = await createPlant(app, `{"id":${spelling},"name":"n"}`)
    t.equal(response.statusCode, 200, spelling)
    t.same((await storedPlants(store)).map((plant) => plant.id), [id], `${spelling} is ${id}`)
  }
})

t.test('a second create of an id is 409 and leaves the first plant untouched', async (t) => {
  const { app, store } = await buildPlugin(t)
  t.equal((await createPlant(app, { id: 7, name: 'first', tag: 'a' })).statusCode, 200)
  const again = await createPlant(app, { id: 7, name: 'second' })
  t.equal(again.statusCode, 409)
  t.same(again.json(), { error: 409, message: 'A plant with this id already exists' })
  t.same(await store.get(7n), { name: 'first', tag: 'a' })
})

t.test('creates of one id arriving at once: exactly one succeeds', async (t) => {
  const { app, store } = await buildPlugin(t)
  const responses = await Promise.all(Array.from({ length: 25 }, (_, i) =>
    createPlant(app, `{"id":9223372036854775806,"name":"racer ${i}"}`)))
  const statuses = responses.map((response) => response.statusCode)
  t.equal(statuses.filter((status) => status === 200).length, 1)
  t.equal(statuses.filter((status) => status === 409).length, 24)
  const winner = responses.find((response) => response.statusCode === 200)!.json().name
  t.same(await storedPlants(store), [{ id: 9223372036854775806n, name: winner }])
})
