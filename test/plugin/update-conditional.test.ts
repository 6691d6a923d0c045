/**
 * PUT /plants/{id}, ETags and preconditions (RFC 9110), as a client sees them through the plugin on
 * each store: every bad input Error-shaped with nothing changed.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { PlantStore } from '../../plugins/store/types.js'
import { AUTH, buildPlugin, createPlant, JSON_TYPE, storedPlants, type Injectable } from '../helpers/plugin-app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { openStore } from '../../plugins/store/index.js'

const pgSkip = await postgresSkip()
const KINDS = [
  { name: 'memory', skip: false as string | false, url: async () => 'memory:' },
  { name: 'SQLite', skip: false as string | false, url: async (t: Test) => `sqlite:${join(t.testdir(), 'plants.db')}` },
  { name: 'PostgreSQL', skip: pgSkip, url: (t: Test) => freshDatabase(t) }
]

const put = (app: Injectable, id: string, payload: string | object, headers: Record<string, string> = {}) => app.inject({
  method: 'PUT', url: `/plants/${id}`, headers: { ...AUTH, ...JSON_TYPE, ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload)
})
const get = (app: Injectable, id: string, headers: Record<string, string> = {}) => app.inject({ url: `/plants/${id}`, headers: { ...AUTH, ...headers } })

async function onStore (t: Test, url: string) {
  const store = await openStore(url)
  t.teardown(() => store.close())
  return { ...await buildPlugin(t, { store }), store }
}

for (const kind of KINDS) {
  t.test(`${kind.name}: PUT replaces a plant; ETags change with each write; If-Match and If-None-Match hold`, { skip: kind.skip }, async (t) => {
    const { app, store } = await onStore(t, await kind.url(t))
    const created = await createPlant(app, '{"id":9007199254740993,"name":"fern","tag":"green"}')
    t.equal(created.statusCode, 200)
    const first = created.headers.etag as string
    t.match(first, /^"[0-9]+"$/, 'POST: a strong ETag')
    t.equal((await get(app, '9007199254740993')).headers.etag, first, 'GET: the same ETag')

    const updated = await put(app, '9007199254740993', { name: 'big fern' }, { 'if-match': first })
    t.equal(updated.statusCode, 200)
    t.equal(updated.body, '{"name":"big fern"}', 'the Plant, without id; the tag left out is removed')
    const second = updated.headers.etag as string
    t.not(second, first, 'a new ETag')
    t.equal((await get(app, '9007199254740993')).body, '{"name":"big fern"}')

    const stale = await put(app, '9007199254740993', { name: 'stale' }, { 'if-match': first })
    t.equal(stale.statusCode, 412)
    t.same(stale.json(), { error: 412, message: 'The plant is not at the ETag in If-Match (it was changed meanwhile): read it again, and retry with its new ETag' })
    t.equal((await get(app, '9007199254740993')).body, '{"name":"big fern"}', 'nothing changed')
    t.equal((await put(app, '9007199254740993', { name: 'weak' }, { 'if-match': `W/${second}` })).statusCode, 412, 'If-Match compares strongly')
    t.equal((await put(app, '9007199254740993', { name: 'listed', tag: 't' }, { 'if-match': `"nope", ${second}` })).statusCode, 200, 'a list of ETags')
    const any = await put(app, '9007199254740993', { id: 9007199254740993n.toString(), name: 'any' }, { 'if-match': '*' })
    t.equal(any.statusCode, 400, 'an id as a string is not an int64')
    t.equal((await put(app, '9007199254740993', '{"id":9007199254740993,"name":"any"}', { 'if-match': '*' })).statusCode, 200, 'If-Match: * and the path\'s id')

    const current = (await get(app, '9007199254740993')).headers.etag as string
    t.equal((await get(app, '9007199254740993', { 'if-none-match': current })).statusCode, 304, 'If-None-Match: the current ETag')
    const notModified = await get(app, '9007199254740993', { 'if-none-match': `"x", W/${current}` })
    t.equal(notModified.statusCode, 304, 'weak comparison, in a list')
    t.equal(notModified.body, '', 'no body')
    t.equal(notModified.headers.etag, current, 'the ETag with it')
    t.equal((await get(app, '9007199254740993', { 'if-none-match': '*' })).statusCode, 304)
    t.equal((await get(app, '9007199254740993', { 'if-none-match': first })).statusCode, 200, 'an old ETag: the plant again')

    t.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: { ...AUTH, 'if-match': first } })).statusCode, 412)
    t.equal((await get(app, '9007199254740993')).statusCode, 200, 'kept')
    t.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: { ...AUTH, 'if-match': current } })).statusCode, 204)
    t.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: { ...AUTH, 'if-match': current } })).statusCode, 404,
      'a missing plant is a 404 whatever If-Match says')
    const missing = await put(app, '9007199254740993', { name: 'ghost' })
    t.equal(missing.statusCode, 404, 'PUT never creates')
    t.same(missing.json(), { error: 404, message: 'No plant has this id' })
    t.same(await storedPlants(store), [], 'nothing stored')
  })
}

t.test('PUT: each bad input is Error-shaped and changes nothing', async (t) => {
  const { app, store } = await buildPlugin(t)
  await createPlant(app, { id: 1, name: 'kept', tag: 'k' })
  const cases: Array<[string, string, number, string | RegExp]> = [
    ['1', '{"id":2,"name":"other"}', 400, 'The id in the body must equal the id in the path'],
    ['abc', '{"name":"x"}', 400, 'params/id must be an integer from -9223372036854775808 to 9223372036854775807'],
    ['1', '{"tag":"no name"}', 400, /name/],
    ['1', '{"name":7}', 400, /name/],
    ['1', `{"name":"${'x'.repeat(1001)}"}`, 400, /more than/],
    ['1', '{"name":', 400, 'Body is not valid JSON'],
    ['1', '[]', 400, /object/]
  ]
  for (const [id, payload, status, message] of cases) {
    const response = await put(app, id, payload)
    t.equal(response.statusCode, status, payload.slice(0, 40))
    t.match(response.json(), { error: status, message })
  }
  t.equal((await app.inject({ method: 'PUT', url: '/plants/1', headers: { ...AUTH, 'content-type': 'text/plain' }, payload: 'x' })).statusCode, 415)
  t.equal((await app.inject({ method: 'PUT', url: '/plants/1', headers: JSON_TYPE, payload: '{"name":"x"}' })).statusCode, 401, 'bearer auth')
  t.same(await storedPlants(store), [{ id: 1n, name: 'kept', tag: 'k' }], 'unchanged')
})

/** A host's store of its own, with the six methods only: no update, no listTagged, no revisions. */
function hostStore (): PlantStore {
  const plants = new Map<bigint, { name: string, tag?: string }>()
  return {
    async create ({ id, ...plant }) { plants.set(id, plant); return plant },
    async get (id) { return plants.get(id) },
    async list ({ limit }) { return [...plants].slice(0, limit).map(([id, plant]) => ({ id, ...plant })) },
    async delete (id) { return plants.delete(id) },
    async ping () {},
    async close () {}
  }
}

t.test('a host store without update or listTagged: PUT and ?tag= answer 501, If-Match never matches, nothing changes', async (t) => {
  const store = hostStore()
  const { app } = await buildPlugin(t, { store })
  const created = await createPlant(app, { id: 1, name: 'host' })
  t.equal(created.statusCode, 200)
  t.notOk('etag' in created.headers, 'no ETag: the store keeps no revisions')
  const update = await put(app, '1', { name: 'new' })
  t.equal(update.statusCode, 501)
  t.same(update.json(), { error: 501, message: 'This plant store cannot update plants (its store has no update method)' })
  const tagged = await app.inject({ url: '/plants?tag=x', headers: AUTH })
  t.equal(tagged.statusCode, 501)
  t.same(tagged.json(), { error: 501, message: 'This plant store cannot list plants by tag (its store has no listTagged method)' })
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...AUTH, 'if-match': '"1"' } })).statusCode, 412)
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/2', headers: { ...AUTH, 'if-match': '"1"' } })).statusCode, 404)
  t.equal((await get(app, '1', { 'if-none-match': '"1"' })).statusCode, 200)
  t.equal((await get(app, '1', { 'if-none-match': '*' })).statusCode, 304)
  t.same(await store.get(1n), { name: 'host' }, 'unchanged')
  t.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...AUTH, 'if-match': '*' } })).statusCode, 204, 'If-Match: * is any plant')
})
