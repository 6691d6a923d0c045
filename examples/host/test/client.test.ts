import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PlantExistsError, PlantStoreClient } from 'plant-store/client'
import { buildHost } from '../src/app.js'

test('plant-store/client talks to the embedded routes with exact ids', async (t) => {
  process.env.DATABASE_URL = 'memory:'
  const app = await buildHost()
  t.after(() => app.close())
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  // The host's JWT, as its users would get it.
  const plants = new PlantStoreClient({ baseUrl: `${base}/garden`, token: app.jwt.sign({ sub: 'client' }) })
  const ids = [9007199254740993n, -(2n ** 63n), 2n ** 63n - 1n]
  for (const id of ids) assert.deepEqual(await plants.create({ id, name: `Plant ${id}` }), { name: `Plant ${id}` })
  assert.deepEqual(await plants.get(9007199254740993n), { name: 'Plant 9007199254740993' })
  await assert.rejects(plants.create({ id: ids[0], name: 'again' }), PlantExistsError)
  const listed: bigint[] = []
  for await (const plant of plants.listAll({ limit: 2 })) listed.push(plant.id)
  assert.deepEqual(listed, [...ids].sort((a, b) => (a < b ? -1 : 1)))
  await plants.delete(ids[0])
  assert.deepEqual((await plants.list()).map(({ id }) => id), [ids[1], ids[2]])
})
