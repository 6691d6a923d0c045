/**
 * The change feed in the host's process (createFeedHandle and the feedHandle option), as a host
 * registers the plugin on its own Fastify: the same changes, cursors and exact ids as GET
 * /plants/changes; waits for the next commit; ends with the app or a signal; says why it cannot run.
 */
import t from 'tap'
import { createFeedHandle, FeedCursorInvalidError, type FeedChange, type FeedHandle } from '../../src/plugin.js'
import { AUTH, buildPlugin, createPlant, JSON_TYPE, type Injectable } from '../helpers/plugin-app.js'

interface Page { changes: Array<{ cursor: string }>, next: string }

/** The next `count` changes of `iterator`. */
async function take (iterator: AsyncGenerator<FeedChange>, count: number): Promise<FeedChange[]> {
  const changes: FeedChange[] = []
  while (changes.length < count) {
    const { value, done } = await iterator.next()
    if (done === true) break
    changes.push(value)
  }
  return changes
}

const page = async (app: Injectable, query = '') => (await app.inject({ url: `/plants/changes${query}`, headers: AUTH })).json<Page>()

t.test('a host follows the feed in-process: the changes GET /plants/changes lists, with its cursors, ids as exact bigints', async (t) => {
  const handle = createFeedHandle()
  const { app } = await buildPlugin(t, { feedHandle: handle })
  await createPlant(app, '{"id":9007199254740993,"name":"Agave","tag":"succulent"}')
  await createPlant(app, { id: 2, name: 'Fern' })
  await app.inject({ method: 'PUT', url: '/plants/2', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"name":"Fern","tag":"shade"}' })
  await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })
  const iterator = handle.changes()
  const changes = await take(iterator, 4)
  t.same(changes.map(({ event }) => [event.type, event.id]), [
    ['plant.created', 9007199254740993n], ['plant.created', 2n], ['plant.updated', 2n], ['plant.deleted', 9007199254740993n]
  ], 'every change in order, the int64 ids exact')
  t.match(changes[0].event, { name: 'Agave', tag: 'succulent', timestamp: String })
  t.same(changes.map(({ cursor }) => cursor), (await page(app)).changes.map(({ cursor }) => cursor), 'the cursors the route gives')

  // Caught up, it waits for the next commit, and wakes with it.
  const waiting = iterator.next()
  await createPlant(app, { id: 3, name: 'Moss' })
  const { value } = await waiting
  t.same([value!.event.type, value!.event.id], ['plant.created', 3n], 'woken by the commit')
  await iterator.return()

  const fromRoute = (await page(app, '?limit=2')).next
  t.same((await take(handle.changes({ after: fromRoute }), 3)).map(({ event }) => event.type), ['plant.updated', 'plant.deleted', 'plant.created'],
    'a cursor the route gave resumes here')
})

t.test('types and after=now, as the route has them', async (t) => {
  const handle = createFeedHandle()
  const { app } = await buildPlugin(t, { feedHandle: handle })
  await createPlant(app, { id: 1, name: 'before' })
  const deletes = handle.changes({ types: ['plant.deleted'], after: 'now' })
  const next = deletes.next()
  await createPlant(app, { id: 2, name: 'skipped' })
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  t.same((await next).value?.event, { type: 'plant.deleted', timestamp: (await next).value?.event.timestamp, id: 1n }, 'only the delete, only after now')
  await deletes.return()
})

t.test('the app closing ends an iteration that waits; so does its signal', async (t) => {
  const handle = createFeedHandle()
  const { app } = await buildPlugin(t, { feedHandle: handle })
  const stop = new AbortController()
  const stopped = handle.changes({ signal: stop.signal }).next()
  stop.abort()
  t.same(await stopped, { value: undefined, done: true }, 'the signal ends it')
  const waiting = handle.changes().next()
  await app.close()
  t.same(await waiting, { value: undefined, done: true }, 'the close ends it')
  t.same(await handle.changes().next(), { value: undefined, done: true }, 'and one begun after the close ends at once')
})

t.test('refusals: a cursor the feed did not give, bad types or limit, a handle not registered, the feed off', async (t) => {
  const handle = createFeedHandle()
  await buildPlugin(t, { feedHandle: handle })
  await t.rejects(handle.changes({ after: 'bm90LWEtY3Vyc29y' }).next(), FeedCursorInvalidError)
  await t.rejects(handle.changes({ types: [] }).next(), { name: 'TypeError', message: /types must be a non-empty list of plant\.created/ })
  await t.rejects(handle.changes({ types: ['plant.moved' as 'plant.created'] }).next(), TypeError)
  await t.rejects(handle.changes({ limit: 0 }).next(), { name: 'RangeError', message: 'plant-store: limit must be an integer from 1 to 1000' })
  const offMessage = /the change feed is off, or not ready: register plant-store with this handle as its feedHandle option/
  await t.rejects(createFeedHandle().changes().next(), { message: offMessage }, 'a handle no plugin was given')
  const off: FeedHandle = createFeedHandle()
  await buildPlugin(t, { feedHandle: off, feed: false })
  await t.rejects(off.changes().next(), { message: offMessage }, 'the feed off')
  const { app } = await buildPlugin(t, { feedHandle: { changes: 'x' } as unknown as FeedHandle }).catch((error: Error) => ({ app: error }))
  t.match(app, { message: /feedHandle/ }, 'an option that is no handle is refused at registration')
})
