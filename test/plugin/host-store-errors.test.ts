import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import plantStore, { PlantExistsError, StoreUnavailableError, type PlantStore } from '../../src/plugin.js'
import { AUTH, collectLogs, failingStore, JSON_TYPE, TOKEN } from '../helpers/plugin-app.js'

const SECRET = 'password=hunter2 at 10.1.2.3:5432, Key (id)=(1), /srv/app/store.js'

async function hostWith (t: Test, store: PlantStore) {
  const { lines, logger } = collectLogs('info')
  const host = Fastify({ logger })
  await host.register(plantStore, { tokens: [TOKEN], store })
  await host.ready()
  t.teardown(() => host.close())
  return { host, lines }
}

const requests = [
  { method: 'POST' as const, url: '/plants', payload: '{"id":1,"name":"Fern"}' },
  { method: 'GET' as const, url: '/plants/1' },
  { method: 'GET' as const, url: '/plants' },
  { method: 'DELETE' as const, url: '/plants/1' }
]

t.test('whatever a host store throws, a client gets the service\'s own status and message, never the store\'s', async (t) => {
  const cases: Array<[string, () => unknown, number, string]> = [
    ['StoreUnavailableError given the driver\'s error', () => new StoreUnavailableError(new Error(SECRET)), 503, 'The plant store is unavailable, try again later'],
    ['PlantExistsError given a message of its own', () => new PlantExistsError(`duplicate key: ${SECRET}`), 409, 'A plant with this id already exists'],
    ['an error with a 404 of its own', () => Object.assign(new Error(SECRET), { statusCode: 404 }), 500, 'Internal server error'],
    ['an error with a 400 of its own', () => Object.assign(new Error(SECRET), { statusCode: 400 }), 500, 'Internal server error'],
    ['an error with a 502 of its own', () => Object.assign(new Error(SECRET), { statusCode: 502 }), 500, 'Internal server error'],
    ['a plain Error', () => new Error(SECRET), 500, 'Internal server error'],
    ['a thrown string', () => SECRET, 500, 'Internal server error'],
    ['null', () => null, 500, 'Internal server error']
  ]
  for (const [name, failure, status, message] of cases) {
    const { host, lines } = await hostWith(t, failingStore(failure))
    for (const request of requests) {
      const response = await host.inject({ ...request, headers: request.payload ? { ...AUTH, ...JSON_TYPE } : AUTH })
      t.equal(response.statusCode, status, `${name}: ${request.method} ${request.url}`)
      t.strictSame(response.json(), { error: status, message }, `${name}: ${request.method} ${request.url}: the service's message`)
      t.notMatch(response.body, /hunter2|10\.1\.2\.3|Key \(id\)|store\.js/, `${name}: nothing of the store's error`)
    }
    if (status >= 500 && failure() !== null) {
      t.ok(lines.some((line) => JSON.stringify(line).includes('hunter2')), `${name}: the store's own error is in the log, for the operator`)
    }
    const ready = await host.inject({ url: '/readyz' })
    t.equal(ready.statusCode, 503, `${name}: /readyz is 503`)
  }
})

t.test('a store method that throws instead of rejecting fails the same way', async (t) => {
  const store = createMemoryStore()
  store.get = () => { throw new Error(SECRET) }
  const { host } = await hostWith(t, store)
  const response = await host.inject({ url: '/plants/1', headers: AUTH })
  t.equal(response.statusCode, 500)
  t.strictSame(response.json(), { error: 500, message: 'Internal server error' })
})

t.test('wrapStore that returns no store is refused at registration, and the opened store is closed', async (t) => {
  const host = Fastify()
  let closed = 0
  const opened = createMemoryStore()
  const close = opened.close.bind(opened)
  opened.close = async () => { closed++; await close() }
  await t.rejects(async () => {
    await host.register(plantStore, { tokens: [TOKEN], store: opened, wrapStore: () => undefined as unknown as PlantStore })
    await host.ready()
  }, /^plant-store: option wrapStore returned no store: it must return an object implementing PlantStore \(create, get, list, delete, ping, close\)$/)
  await host.close()
  t.equal(closed, 0, 'a store the host passed in is the host\'s to close')

  const withUrl = Fastify()
  await t.rejects(async () => {
    await withUrl.register(plantStore, { tokens: [TOKEN], store: 'memory:', wrapStore: () => ({}) as PlantStore })
    await withUrl.ready()
  }, /option wrapStore returned no store/)
  await t.resolves(withUrl.close(), 'the host closes without a crash')
})
