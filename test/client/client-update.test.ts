/** The client's update, conditional reads and writes, list by tag and page iterator, on each store. */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import {
  etagOf, NOT_MODIFIED, PlantNotFoundError, PlantStoreClient, PreconditionFailedError, UnexpectedResponseError
} from '../../client/index.js'
import { TOKEN } from '../helpers/app.js'
import { answer, httpServer, listeningService, recordedClient, trace } from '../helpers/client.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()
const STORES: Array<{ name: string, skip?: string | false, url: (t: Test) => Promise<string> }> = [
  { name: 'memory', url: async () => 'memory:' },
  { name: 'SQLite', url: async (t) => `sqlite:${join(t.testdir({}), 'plants.db')}` },
  { name: 'PostgreSQL', skip: pgSkip, url: freshDatabase }
]
const BIG = 2n ** 53n + 1n

for (const { name, skip, url } of STORES) {
  t.test(`on ${name}: update with ifMatch, get with ifNoneMatch, delete with ifMatch, ETags on every result`, { skip }, async (t) => {
    const client = new PlantStoreClient({ baseUrl: await listeningService(t, { store: await url(t) }), token: TOKEN })
    const created = await client.create({ id: BIG, name: 'fern', tag: 'green' })
    const first = etagOf(created)!
    t.match(first, /^"[0-9]+"$/, 'create: its ETag')
    t.equal(etagOf(await client.get(BIG)), first, 'get: the same')
    t.equal(await client.get(BIG, { ifNoneMatch: first }), NOT_MODIFIED, 'not modified while current')
    const updated = await client.update(BIG, { name: 'big fern' }, { ifMatch: first })
    t.same(updated, { name: 'big fern' })
    const second = etagOf(updated)!
    t.not(second, first)
    t.same(await client.get(BIG, { ifNoneMatch: first }), { name: 'big fern' }, 'an old ETag: the plant')
    await t.rejects(client.update(BIG, { name: 'stale' }, { ifMatch: first }), PreconditionFailedError)
    await t.rejects(client.delete(BIG, { ifMatch: first }), PreconditionFailedError)
    await t.rejects(client.update(1n, { name: 'ghost' }), PlantNotFoundError, 'PUT never creates')
    t.same(await client.get(BIG), { name: 'big fern' }, 'unchanged')
    await client.delete(BIG, { ifMatch: second })
    await t.rejects(client.get(BIG), PlantNotFoundError)
  })

  t.test(`on ${name}: list({ tag }) and pages() follow Link to the end, asking for no empty page`, { skip }, async (t) => {
    const baseUrl = await listeningService(t, { store: await url(t) })
    const { client, attempts } = recordedClient(baseUrl)
    for (let id = 1n; id <= 7n; id++) await client.create({ id, name: `p${id}`, tag: id % 2n === 0n ? 'even' : 'odd' })
    t.same((await client.list({ tag: 'even' })).map(({ id }) => id), [2n, 4n, 6n])
    attempts.length = 0
    const pages = []
    for await (const page of client.pages({ tag: 'odd', limit: 2 })) pages.push(page.map(({ id }) => id))
    t.same(pages, [[1n, 3n], [5n, 7n]], 'a full last page has no Link: no empty page is asked for')
    t.same(trace(attempts), ['GET 200', 'GET 200'])
    const all = []
    for await (const page of client.pages({ limit: 3 })) all.push(page.length)
    t.same(all, [3, 3, 1], 'a short page ends it')
  })
}

t.test('under a prefix, the link is followed under it; a link that leaves baseUrl is refused', async (t) => {
  let linked = '/garden/plants?after=1'
  const base = await httpServer(t, (request, response) => {
    const first = !request.url!.includes('after')
    answer(response, 200, first ? '[{"id":1,"name":"a"}]' : '[]', { 'content-type': 'application/json', ...(first && { link: `<${linked}>; rel="next"` }) })
  })
  const client = new PlantStoreClient({ baseUrl: `${base}/garden`, token: TOKEN })
  const pages = []
  for await (const page of client.pages()) pages.push(page.length)
  t.same(pages, [1, 0])
  linked = 'http://elsewhere.example/plants?after=1'
  await t.rejects((async () => { for await (const page of client.pages()) t.ok(page) })(), UnexpectedResponseError)
  // Behind a proxy that strips a prefix, a link can name another path: list() answers its page all the same.
  t.same(await client.list(), [{ id: 1n, name: 'a' }], 'list reads no Link')
})
