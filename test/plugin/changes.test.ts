import { once } from 'node:events'
import { request } from 'node:http'
import t from 'tap'
import { FeedBusyError, FeedCursorGoneError, FeedCursorInvalidError } from '../../plugins/feed/errors.js'
import { encodeCursor, decodeCursor } from '../../plugins/feed/cursor.js'
import { listeningFeed, openStream } from '../helpers/feed-app.js'
import { AUTH, buildPlugin, createPlant, JSON_TYPE, OTHER_TOKEN } from '../helpers/plugin-app.js'
import type { Injectable } from '../helpers/plugin-app.js'

const changes = (app: Injectable, query = '', headers = AUTH) => app.inject({ url: `/plants/changes${query}`, headers })

interface Page { changes: Array<{ cursor: string, event: Record<string, unknown> }>, next: string }

t.test('GET /plants/changes: every create and delete once, in order, with the webhook body as event and exact ids', async (t) => {
  const { app } = await buildPlugin(t)
  t.equal((await changes(app)).body.startsWith('{"changes":[],"next":"'), true, 'none yet')
  await createPlant(app, '{"id":9007199254740993,"name":"Agave","tag":"succulent"}')
  await createPlant(app, { id: 2, name: 'Fern' })
  await createPlant(app, { id: 2, name: 'Again' })
  await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })
  const all = await changes(app)
  t.equal(all.statusCode, 200)
  t.match(all.headers['content-type'], /^application\/json/)
  t.match(all.body, /"event":\{"type":"plant\.created","timestamp":"[^"]+","id":9007199254740993,"name":"Agave","tag":"succulent"\}/, 'the id exact, the text as stored')
  const page = all.json<Page>()
  t.same(page.changes.map(({ event }) => [event.type, event.name]), [['plant.created', 'Agave'], ['plant.created', 'Fern'], ['plant.deleted', undefined]])
  t.equal(page.next, page.changes[2].cursor, 'next is the last change\'s cursor')
  const first = (await changes(app, '?limit=1')).json<Page>()
  t.equal(first.changes.length, 1, 'limit')
  const rest = (await changes(app, `?after=${first.next}`)).json<Page>()
  t.same(rest.changes, page.changes.slice(1), 'after a cursor: the rest')
  const end = (await changes(app, `?after=${page.next}`)).json<Page>()
  t.same(end, { changes: [], next: page.next }, 'at the end: none, and next stays')
})

t.test('an update is in the feed as plant.updated, the plant as stored; a refused update writes nothing', async (t) => {
  const { app } = await buildPlugin(t)
  await createPlant(app, '{"id":9007199254740993,"name":"Agave"}')
  const put = (payload: string, headers = {}) => app.inject({ method: 'PUT', url: '/plants/9007199254740993', headers: { ...AUTH, ...JSON_TYPE, ...headers }, payload })
  t.equal((await put('{"name":"Agave","tag":"blue"}')).statusCode, 200)
  t.equal((await put('{"name":"stale"}', { 'if-match': '"x"' })).statusCode, 412)
  t.equal((await put('{"name":7}')).statusCode, 400)
  const page = await changes(app, '?types=plant.updated')
  t.match(page.body, /"event":\{"type":"plant\.updated","timestamp":"[^"]+","id":9007199254740993,"name":"Agave","tag":"blue"\}/, 'the id exact')
  t.equal(page.json<Page>().changes.length, 1, 'only the update that was written')
})

t.test('types= filters, and next moves past what it skipped; after=now answers the head', async (t) => {
  const { app } = await buildPlugin(t)
  await createPlant(app, { id: 1, name: 'a' })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  await createPlant(app, { id: 3, name: 'c' })
  const deleted = (await changes(app, '?types=plant.deleted&limit=2')).json<Page>()
  t.same(deleted.changes.map(({ event }) => event.type), ['plant.deleted'])
  const none = (await changes(app, `?types=plant.deleted&after=${deleted.next}`)).json<Page>()
  t.same(none.changes, [], 'no delete after it')
  t.not(none.next, deleted.next, 'next moved past the create the filter skipped')
  t.same((await changes(app, `?after=${none.next}`)).json<Page>().changes, [], 'past it')
  const both = (await changes(app, '?types=plant.created,plant.deleted')).json<Page>()
  t.equal(both.changes.length, 3)
  const head = (await changes(app, '?after=now')).json<Page>()
  t.same(head.changes, [], 'after=now: no change')
  t.same((await changes(app, `?after=${head.next}`)).json<Page>().changes, [], 'nothing after the head')
  await createPlant(app, { id: 4, name: 'd' })
  t.same((await changes(app, `?after=${head.next}`)).json<Page>().changes.map(({ event }) => event.id), [4], 'what came after the head')
})

t.test('bad input: 400 for a malformed cursor or query, 410 for another feed\'s cursor or one past the head, each Error-shaped', async (t) => {
  const { app } = await buildPlugin(t)
  await createPlant(app, { id: 1, name: 'a' })
  const { next } = (await changes(app)).json<Page>()
  const { id } = decodeCursor(next)!
  for (const after of ['x', '***', Buffer.from('not.a.cursor').toString('base64url'), 'a'.repeat(201)]) {
    const response = await changes(app, `?after=${encodeURIComponent(after)}`)
    t.equal(response.statusCode, 400, after)
    t.equal(response.json().error, 400)
  }
  t.same((await changes(app, '?after=x')).json(), { error: 400, message: new FeedCursorInvalidError().message })
  for (const query of ['?limit=0', '?limit=1001', '?wait=31', '?wait=-1', '?types=plant.eaten', '?types=plant.created,']) {
    t.equal((await changes(app, query)).statusCode, 400, query)
  }
  const gone = { error: 410, message: new FeedCursorGoneError().message }
  t.same((await changes(app, `?after=${encodeCursor('00000000-0000-0000-0000-000000000000', { xid: 0n, seq: 1n })}`)).json(), gone, 'another feed')
  const ahead = await changes(app, `?after=${encodeCursor(id, { xid: 0n, seq: 99n })}`)
  t.equal(ahead.statusCode, 410, 'ahead of the head')
  t.same(ahead.json(), gone)
  t.equal((await changes(app, '', {} as typeof AUTH)).statusCode, 401, 'behind the bearer auth')
})

t.test('a long-poll answers as soon as a matching change commits; a busy feed is 503 with Retry-After', async (t) => {
  const { app } = await buildPlugin(t, { feed: { maxWaiters: 2, maxWaitersPerToken: 1 } })
  const { next } = (await changes(app, '?after=now')).json<Page>()
  const waiting = changes(app, `?after=${next}&wait=30&types=plant.deleted`)
  // The second of one token is over its cap; another token's is not, and a third is over the process's.
  await new Promise((resolve) => setImmediate(resolve))
  const busy = await changes(app, `?after=${next}&wait=30`)
  t.equal(busy.statusCode, 503)
  t.equal(busy.headers['retry-after'], '1')
  t.same(busy.json(), { error: 503, message: new FeedBusyError().message })
  const other = changes(app, `?after=${next}&wait=30`, { authorization: `Bearer ${OTHER_TOKEN}` })
  await new Promise((resolve) => setImmediate(resolve))
  t.equal((await changes(app, `?after=${next}&wait=30`, { authorization: `Bearer ${OTHER_TOKEN}x` })).statusCode, 401)
  await createPlant(app, { id: 1, name: 'a' })
  t.same((await other).json<Page>().changes.map(({ event }) => event.id), [1], 'woken by the commit')
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  const deleted = (await waiting).json<Page>()
  t.same(deleted.changes.map(({ event }) => event.type), ['plant.deleted'], 'the create did not match its filter: it waited on for the delete')
})

t.test('a long-poll still waiting when the app closes is answered at once, with no change', async (t) => {
  const { app } = await buildPlugin(t)
  const waiting = changes(app, '?after=now&wait=30')
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setImmediate(resolve))
  await app.close()
  const response = await waiting
  t.equal(response.statusCode, 200)
  t.same(response.json<Page>().changes, [])
})

t.test('with feed: false, GET /plants/changes is 404 and creates write nothing more', async (t) => {
  const { app } = await buildPlugin(t, { feed: false, notFound: true })
  await createPlant(app, { id: 1, name: 'a' })
  const response = await changes(app)
  t.equal(response.statusCode, 404)
})

t.test('a long-poll whose client goes frees its place at once, not at the end of its wait', async (t) => {
  const { responses, url } = await listeningFeed(t, { maxWaitersPerToken: 1 })
  const turn = () => new Promise((resolve) => setImmediate(resolve))
  const before = responses.length
  const gone = request(`${url}/plants/changes?after=now&wait=30`, { headers: AUTH })
  gone.on('error', () => {})
  gone.end()
  for (let turns = 0; responses.length === before && turns < 100_000; turns++) await turn()
  // Its first read, then its wait (30 s on the fake clock, which does not move here).
  for (let turns = 0; turns < 20; turns++) await turn()
  const busy = await openStream(`${url}/plants/changes?after=now`, { ...AUTH, accept: 'text/event-stream' })
  t.equal(busy.status, 503, 'it holds its token\'s place while it waits')
  await busy.body()
  const closed = once(responses[before], 'close')
  gone.destroy()
  await closed
  for (let turns = 0; turns < 20; turns++) await turn()
  const again = await openStream(`${url}/plants/changes?after=now`, { ...AUTH, accept: 'text/event-stream' })
  t.equal(again.status, 200, 'freed once its client went')
  again.close()
})
