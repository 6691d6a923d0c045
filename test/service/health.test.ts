import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { build } from '../helpers/app.js'

t.test('/healthz answers ok while the process runs', async (t) => {
  const { app } = await build(t)
  const response = await app.inject({ url: '/healthz' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ok' })
})

t.test('/readyz answers ok when the store answers', async (t) => {
  const { app } = await build(t)
  const response = await app.inject({ url: '/readyz' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ok' })
})

t.test('/readyz answers 503 in the Error shape when the store does not', async (t) => {
  const store = { ...createMemoryStore(), ping: async () => { throw new Error('connection refused') } }
  const { app } = await build(t, { store })
  const response = await app.inject({ url: '/readyz' })
  t.equal(response.statusCode, 503)
  t.same(response.json(), { error: 503, message: 'The plant store is unavailable, try again later' })
})
