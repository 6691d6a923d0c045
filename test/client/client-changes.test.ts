import t from 'tap'
import { CursorGoneError, InvalidRequestError, PlantStoreClient, UnexpectedResponseError, type Change } from '../../client/index.js'
import { TOKEN } from '../helpers/app.js'
import { answer, httpServer, listeningService, recordedClient, relay, trace } from '../helpers/client.js'

const BIG = 2n ** 63n - 1n

/** The first `count` changes the iteration yields. */
async function take (changes: AsyncGenerator<Change>, count: number) {
  const taken: Change[] = []
  for await (const change of changes) {
    taken.push(change)
    if (taken.length === count) break
  }
  return taken
}

const summary = (changes: Change[]) => changes.map(({ event }) => `${event.type} ${event.id}`)

t.test('changes() follows every create, update and delete in order, with exact int64 ids, and resumes from a cursor', async (t) => {
  const client = new PlantStoreClient({ baseUrl: await listeningService(t), token: TOKEN })
  await client.create({ id: BIG, name: 'Fern' })
  await client.update(BIG, { name: 'Big fern', tag: 'green' })
  await client.create({ id: 2n ** 53n + 1n, name: 'Moss' })
  await client.delete(BIG)
  const all = await take(client.changes({ wait: 0 }), 10)
  t.strictSame(summary(all), [`plant.created ${BIG}`, `plant.updated ${BIG}`, `plant.created ${2n ** 53n + 1n}`, `plant.deleted ${BIG}`])
  t.equal(all[1].event.type === 'plant.updated' && all[1].event.tag, 'green', 'the event as its webhook body carries it')
  t.strictSame(summary(await take(client.changes({ after: all[1].cursor, wait: 0 }), 10)), summary(all.slice(2)), 'from a cursor: what came after it')
  t.strictSame(summary(await take(client.changes({ types: ['plant.deleted'], limit: 1, wait: 0 }), 10)), [`plant.deleted ${BIG}`], 'of the types asked for')
  t.strictSame(await take(client.changes({ after: 'now', wait: 0 }), 10), [], 'from the head: none yet')
})

t.test('changes() long-polls: a create while it waits is yielded as it commits, by the one request waiting', async (t) => {
  const service = await listeningService(t)
  const owner = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  await owner.create({ id: 1n, name: 'Moss' })
  const [first] = await take(owner.changes({ wait: 0 }), 1)
  const { client, attempts } = recordedClient(service)
  const followed = take(client.changes({ after: first.cursor, wait: 30 }), 1)
  // Once the request (a wait of 30 s after the first plant) is sent, another plant is created.
  while (attempts.length < 1) await new Promise((resolve) => setImmediate(resolve))
  await owner.create({ id: 2n, name: 'Fern' })
  t.strictSame(summary(await followed), ['plant.created 2'])
  t.strictSame(trace(attempts), ['GET 200'], 'one request: the wait the create ended')
  t.equal(new URL(attempts[0].url).searchParams.get('wait'), '30')
})

t.test('changes() waits out a failure and asks again from its last cursor: nothing missed, nothing twice', async (t) => {
  const service = await listeningService(t)
  const owner = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  for (const id of [1n, 2n, 3n]) await owner.create({ id, name: `Plant ${id}` })
  let requests = 0
  const proxy = await httpServer(t, async (request, response, body) => {
    requests++
    // The second request (after the first page) fails: a 503, then a 502 of a proxy without an Error body.
    if (requests === 2) return answer(response, 503, JSON.stringify({ error: 503, message: 'busy' }), { 'retry-after': '0' })
    if (requests === 3) return answer(response, 502, '<html>bad gateway</html>', { 'content-type': 'text/html' })
    // Then no answer at all: a network failure.
    if (requests === 4) return request.socket.destroy()
    await relay(service, request, response, body)
  })
  const { client, attempts } = recordedClient(proxy, { retry: { attempts: 1, baseDelay: 1, maxDelay: 4 } })
  const changes = await take(client.changes({ limit: 1, wait: 0 }), 10)
  t.strictSame(summary(changes), ['plant.created 1', 'plant.created 2', 'plant.created 3'], 'each once, in order')
  t.strictSame(trace(attempts), ['GET 200', 'GET 503', 'GET 502', 'GET undefined', 'GET 200', 'GET 200', 'GET 200'])
  const after = attempts.map(({ url }) => new URL(url).searchParams.get('after'))
  t.equal(after[0], null, 'from the oldest kept')
  t.strictSame(new Set(after.slice(1, 5)).size, 1, 'each failure asked again after the same cursor')
})

t.test('changes() throws what asking again would not change: a malformed cursor (400), one of another feed (410), an answer of another shape', async (t) => {
  const client = new PlantStoreClient({ baseUrl: await listeningService(t), token: TOKEN })
  await t.rejects(take(client.changes({ after: 'not-a-cursor', wait: 0 }), 1), InvalidRequestError)
  const otherFeed = Buffer.from('00000000-0000-4000-8000-000000000000.0.1').toString('base64url')
  const gone = await take(client.changes({ after: otherFeed, wait: 0 }), 1).catch((error: unknown) => error)
  t.ok(gone instanceof CursorGoneError, 'a 410 is a CursorGoneError')
  t.match(gone, { status: 410, name: 'CursorGoneError', message: /list the changes again/ })
  const odd = await httpServer(t, (_request, response) => answer(response, 200, '{"changes":[{"cursor":"a","event":{"type":"plant.created","id":"1"}}],"next":"a"}'))
  await t.rejects(take(new PlantStoreClient({ baseUrl: odd, token: TOKEN }).changes({ wait: 0 }), 1), UnexpectedResponseError, 'a string id is no change')
})

t.test('changes() ends with the signal\'s reason, also while it waits for a change', async (t) => {
  const client = new PlantStoreClient({ baseUrl: await listeningService(t), token: TOKEN })
  const controller = new AbortController()
  const followed = take(client.changes({ after: 'now', signal: controller.signal }), 1)
  setImmediate(() => controller.abort(new Error('enough')))
  await t.rejects(followed, { message: 'enough' })
})
