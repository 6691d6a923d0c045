/** GET /plants?tag= and the Link rel="next" of RFC 8288: a client follows the links to the end and stops there. */
import t from 'tap'
import Fastify from 'fastify'
import plantStore from '../../src/plugin.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { AUTH, buildPlugin, createPlant, TOKEN, type Injectable } from '../helpers/plugin-app.js'

/** Every page from `url` on, following Link rel="next": the ids of each page. */
async function follow (app: Injectable, url: string) {
  const pages: string[][] = []
  for (let next: string | undefined = url; next !== undefined;) {
    const response: Awaited<ReturnType<Injectable['inject']>> = await app.inject({ url: next, headers: AUTH })
    t.equal(response.statusCode, 200)
    pages.push(response.json().map(({ id }: { id: number }) => String(id)))
    const link = response.headers.link as string | undefined
    next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1]
  }
  return pages
}

t.test('Link rel="next" on every page after which more follow, none on the last (a full one too); tag and limit kept', async (t) => {
  const { app } = await buildPlugin(t)
  for (let id = 1; id <= 7; id++) await createPlant(app, { id, name: `p${id}`, tag: id % 2 === 0 ? 'even' : 'odd' })
  t.same(await follow(app, '/plants?limit=3'), [['1', '2', '3'], ['4', '5', '6'], ['7']])
  t.same(await follow(app, '/plants?limit=7'), [['1', '2', '3', '4', '5', '6', '7']], 'a full last page has no Link')
  t.same(await follow(app, '/plants?limit=6'), [['1', '2', '3', '4', '5', '6'], ['7']], 'one plant past the page is enough')
  t.same(await follow(app, '/plants?tag=odd&limit=2'), [['1', '3'], ['5', '7']], 'the tag is kept')
  t.same(await follow(app, '/plants?limit=2&after=5'), [['6', '7']], 'after the cursor, the full last page has none')
  await app.inject({ method: 'DELETE', url: '/plants/7', headers: AUTH })
  t.same(await follow(app, '/plants?tag=odd&limit=2'), [['1', '3'], ['5']], 'a deleted plant is not counted')
  t.same(await follow(app, '/plants?tag=even'), [['2', '4', '6']])
  t.same(await follow(app, '/plants?tag=none'), [[]])
  const page = await app.inject({ url: '/plants?tag=a%20b%26c&limit=1&after=-3', headers: AUTH })
  t.equal(page.body, '[]')
  await createPlant(app, { id: 8, name: 'spaced', tag: 'a b&c' })
  await createPlant(app, { id: 9, name: 'spaced too', tag: 'a b&c' })
  const spaced = await app.inject({ url: '/plants?tag=a%20b%26c&limit=1', headers: AUTH })
  t.equal(spaced.headers.link, '</plants?tag=a+b%26c&limit=1&after=8>; rel="next"', 'the tag encoded, after set')
  t.same(spaced.json(), [{ id: 8, name: 'spaced', tag: 'a b&c' }])
})

t.test('a page that ends at its byte bound has a Link too', async (t) => {
  const { app } = await buildPlugin(t, { maxTextLength: 200_000 })
  const name = 'x'.repeat(190_000)
  for (let id = 1; id <= 7; id++) await createPlant(app, { id, name })
  const first = await app.inject({ url: '/plants', headers: AUTH })
  t.ok(first.json().length < 7, 'cut at 1 MiB')
  t.match(first.headers.link, /^<\/plants\?after=[0-9]+>; rel="next"$/)
  t.same((await follow(app, '/plants')).flat(), ['1', '2', '3', '4', '5', '6', '7'])
})

t.test('under a prefix, the link is the prefixed path', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: createMemoryStore() })
  for (const id of [1, 2, 3]) await app.inject({ method: 'POST', url: '/garden/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: { id, name: 'n' } })
  const page = await app.inject({ url: '/garden/plants?limit=2', headers: AUTH })
  t.equal(page.headers.link, '</garden/plants?limit=2&after=2>; rel="next"')
})
