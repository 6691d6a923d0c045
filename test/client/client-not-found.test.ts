import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { PlantNotFoundError, PlantStoreClient, PlantStoreError } from '../../client/index.js'
import plantStore from '../../src/plugin.js'
import { TOKEN } from '../helpers/app.js'
import { answer, faultyProxy, httpServer, listeningService, recordedClient, trace } from '../helpers/client.js'

const NO_SUCH_PLANT = JSON.stringify({ error: 404, message: 'No plant has this id' })

/** What each operation of a client throws, by name. */
function everyOperation (client: PlantStoreClient): Array<[string, () => Promise<unknown>]> {
  return [
    ['get', () => client.get(1n)],
    ['create', () => client.create({ id: 1n, name: 'Fern' })],
    ['list', () => client.list()],
    ['listAll', async () => { for await (const plant of client.listAll()) t.fail(`yielded ${plant.id}`) }],
    ['delete', () => client.delete(1n)]
  ]
}

const refused = (call: () => Promise<unknown>) => call().then(() => new Error('not refused'), (error: unknown) => error)

/** Every operation is refused with a RouteNotFoundError carrying `body`, whose message points at baseUrl. */
async function wrongRouteEverywhere (t: Test, client: PlantStoreClient, body: object) {
  for (const [operation, call] of everyOperation(client)) {
    const error = await refused(call)
    t.type(error, PlantStoreError, operation)
    t.notOk(error instanceof PlantNotFoundError, `${operation}: not a PlantNotFoundError`)
    t.match(error, { name: 'RouteNotFoundError', status: 404, body, message: /check baseUrl/ }, operation)
    t.strictSame((error as PlantStoreError).body, body, `${operation}: the body as answered`)
  }
}

t.test('a base URL without the prefix is not "no such plant": every call throws a RouteNotFoundError', async (t) => {
  const host = Fastify()
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: 'memory:' })
  t.teardown(() => host.close())
  const origin = await host.listen({ host: '127.0.0.1', port: 0 })

  // The host's own 404 ({statusCode, error: "Not Found", message}) is no Error body: made from the status line.
  await wrongRouteEverywhere(t, new PlantStoreClient({ baseUrl: origin, token: TOKEN }), { error: 404, message: '404 Not Found' })
  t.strictSame(await new PlantStoreClient({ baseUrl: `${origin}/garden`, token: TOKEN }).list(), [], 'nothing was created')

  // The service's own answer to a path it has no route for.
  const service = await listeningService(t)
  await wrongRouteEverywhere(t, new PlantStoreClient({ baseUrl: `${service}/garden`, token: TOKEN }),
    { error: 404, message: 'Route not found' })
})

t.test('only get and delete of a plant read the service\'s "no such plant" answer as PlantNotFoundError', async (t) => {
  const answers: Record<string, string> = {
    '/plants/1': NO_SUCH_PLANT,
    '/plants/2': JSON.stringify({ error: 404, message: 'Not here' }),
    '/plants/3': JSON.stringify({ error: 410, message: 'No plant has this id' }),
    '/plants/4': '',
    '/plants/5': '<html>No plant has this id</html>'
  }
  const url = await httpServer(t, (request, response) => answer(response, 404, answers[request.url!] ?? NO_SUCH_PLANT))
  const client = new PlantStoreClient({ baseUrl: url, token: TOKEN })

  for (const call of [() => client.get(1n), () => client.delete(1n)]) {
    const error = await refused(call)
    t.type(error, PlantNotFoundError, String(call))
    t.match(error, { status: 404, body: { error: 404, message: 'No plant has this id' }, message: 'No plant has this id' })
  }
  // POST /plants and GET /plants have no plant to miss: the same words there are someone else's.
  for (const call of [() => client.create({ id: 1n, name: 'x' }), () => client.list()]) {
    t.match(await refused(call), { name: 'RouteNotFoundError', status: 404 }, String(call))
  }
  for (const id of [2n, 3n, 4n, 5n]) {
    for (const call of [() => client.get(id), () => client.delete(id)]) {
      const error = await refused(call)
      t.notOk(error instanceof PlantNotFoundError, `${call} ${answers[`/plants/${id}`]}`)
      t.match(error, { name: 'RouteNotFoundError', status: 404 })
    }
  }
})

t.test('a delete whose first attempt may have been carried out still throws a 404 that is not "no such plant"', async (t) => {
  const service = await listeningService(t)
  // A 503 from a proxy in front, then the service's answer to a path without the prefix.
  const proxy = await faultyProxy(t, service, 'DELETE', (_request, response) =>
    answer(response, 503, JSON.stringify({ error: 503, message: 'The plant store is unavailable, try again later' })))
  const viaProxy = recordedClient(`${proxy.url}/garden`, { retry: { baseDelay: 10 } })
  const error = await refused(() => viaProxy.client.delete(1n))
  t.match(error, { name: 'RouteNotFoundError', status: 404, body: { error: 404, message: 'Route not found' } })
  t.strictSame(trace(viaProxy.attempts), ['DELETE 503', 'DELETE 404'])

  // No answer at all, then a bare 404 from something in between.
  let requests = 0
  const flaky = await httpServer(t, (request, response) => {
    if (++requests === 1) request.socket.destroy()
    else answer(response, 404, '', { 'content-type': 'text/plain' })
  })
  const direct = recordedClient(flaky, { retry: { baseDelay: 10 } })
  t.match(await refused(() => direct.client.delete(1n)), { name: 'RouteNotFoundError', body: { error: 404, message: '404 Not Found' } })
  t.strictSame(trace(direct.attempts), ['DELETE undefined', 'DELETE 404'])
})
