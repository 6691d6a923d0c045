/**
 * GET /plants/changes with Accept: text/event-stream, over a real socket: the events, resuming,
 * heartbeats, the stream's lifetime, a slow reader, shutdown and the caps. The feed's timers run
 * on a fake clock.
 */
import { once } from 'node:events'
import { request } from 'node:http'
import t, { type Test } from 'tap'
import { FeedBusyError, FeedCursorInvalidError } from '../../plugins/feed/errors.js'
import { listeningFeed, openStream } from '../helpers/feed-app.js'
import { AUTH, createPlant, JSON_TYPE, OTHER_TOKEN } from '../helpers/plugin-app.js'

const STREAM = { ...AUTH, accept: 'text/event-stream' }
const turn = () => new Promise((resolve) => setImmediate(resolve))
const page = async (app: Awaited<ReturnType<typeof listeningFeed>>['app'], query: string) =>
  (await app.inject({ url: `/plants/changes${query}`, headers: AUTH })).json<{ changes: Array<{ cursor: string, event: { type: string, id: number } }>, next: string }>()
/** The feed of a listeningFeed app, with its count of open streams. */
const feedOf = (counted: object) => (counted as { feed: { streams: { size: number } } }).feed

t.test('a stream sends each change as an event (id: its cursor, event: its type, data: the event), then those that commit while it is open', async (t) => {
  const { app, url } = await listeningFeed(t)
  await createPlant(app, '{"id":9007199254740993,"name":"Agave"}')
  await app.inject({ method: 'PUT', url: '/plants/9007199254740993', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"name":"Agave","tag":"blue"}' })
  const stream = await openStream(`${url}/plants/changes`, STREAM)
  t.equal(stream.status, 200)
  t.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8')
  t.equal(stream.headers['cache-control'], 'no-store')
  await stream.until(() => stream.state.events.length === 2)
  const page = (await app.inject({ url: '/plants/changes', headers: AUTH })).json<{ changes: Array<{ cursor: string, event: { type: string } }> }>()
  t.same(stream.state.events.map(({ id, event, data }) => ({ id, event, data: JSON.parse(data) })),
    page.changes.map(({ cursor, event }) => ({ id: cursor, event: event.type, data: event })), 'the long-poll\'s changes, the same cursors')
  t.match(stream.state.events[0].data, /"id":9007199254740993,/, 'the id exact')
  await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })
  await stream.until(() => stream.state.events.length === 3)
  t.same([stream.state.events[2].event, JSON.parse(stream.state.events[2].data).type], ['plant.deleted', 'plant.deleted'], 'woken by the commit')
  stream.close()
})

t.test('Last-Event-ID (or after) resumes after that event; types filters; a bad Last-Event-ID is 400 Error-shaped', async (t) => {
  const { app, url } = await listeningFeed(t)
  for (const id of [1, 2, 3]) await createPlant(app, { id, name: `p${id}` })
  await app.inject({ method: 'DELETE', url: '/plants/2', headers: AUTH })
  const first = await openStream(`${url}/plants/changes`, STREAM)
  await first.until(() => first.state.events.length === 4)
  first.close()
  const resumed = await openStream(`${url}/plants/changes`, { ...STREAM, 'last-event-id': first.state.events[1].id! })
  await resumed.until(() => resumed.state.events.length === 2)
  t.same(resumed.state.events.map(({ data }) => JSON.parse(data).id), [3, 2], 'the events after it, in order')
  resumed.close()
  const after = await openStream(`${url}/plants/changes?types=plant.deleted&after=${first.state.events[0].id!}`, STREAM)
  await after.until(() => after.state.events.length === 1)
  t.same(after.state.events.map(({ event }) => event), ['plant.deleted'])
  after.close()
  const bad = await openStream(`${url}/plants/changes`, { ...STREAM, 'last-event-id': 'not-a-cursor' })
  t.equal(bad.status, 400)
  t.same(JSON.parse(await bad.body()), { error: 400, message: new FeedCursorInvalidError().message })
})

t.test('an idle stream gets a heartbeat comment each interval, one timer for all streams; the stream ends after its lifetime', async (t) => {
  const { clock, config, url } = await listeningFeed(t, { heartbeat: 15_000, streamLifetime: 60_000 })
  const before = clock.pending()
  const first = await openStream(`${url}/plants/changes?after=now`, STREAM)
  const timers = clock.pending()
  const second = await openStream(`${url}/plants/changes?after=now`, STREAM)
  t.equal(clock.pending(), timers + 1, 'a second stream adds its wait\'s timer, no heartbeat of its own')
  await clock.advance(config.heartbeatMs)
  for (const stream of [first, second]) await stream.until(() => stream.state.comments.length === 1)
  t.same([first.state.comments, second.state.comments], [[': heartbeat'], [': heartbeat']])
  await clock.advance(config.streamLifetimeMs - config.heartbeatMs)
  for (const stream of [first, second]) await stream.body()
  t.same([first, second].map(({ state }) => [state.ended, state.comments.length, state.events.length]), [[true, 3, 0], [true, 3, 0]],
    'ended by the server, after a heartbeat each interval before')
  t.equal(clock.pending(), before, 'no timer of theirs left once the streams ended')
})

t.test('a slow reader: the stream waits for its socket to drain, reading no more from the store meanwhile; it then gets every event in order', async (t) => {
  // Events of 100 kB each, 30 MB in all: more than the loopback socket's buffers hold.
  const { app, clock, config, counted, responses, url } = await listeningFeed(t, {}, 100_000)
  const total = 300
  const name = 'x'.repeat(100_000)
  for (let id = 1; id <= total; id++) await createPlant(app, { id, name })
  const full = async () => {
    const stream = await openStream(`${url}/plants/changes`, STREAM)
    stream.response.pause()
    const raw = responses.at(-1)!
    for (let turns = 0; !raw.writableNeedDrain && turns < 100_000; turns++) await turn()
    return { stream, raw }
  }
  const { stream, raw } = await full()
  t.ok(raw.writableNeedDrain, 'the socket is full')
  const read = counted.rowsRead
  const held = raw.writableLength
  await clock.advance(config.heartbeatMs)
  for (let turns = 0; turns < 100; turns++) await turn()
  t.equal(counted.rowsRead, read, 'nothing more read while it is full')
  t.equal(raw.writableLength, held, 'nor written: not even a heartbeat')
  t.ok(read < total, `the stream read ${read} of ${total} events`)
  t.ok(held < 2 * 1024 * 1024, `the server holds ${held} bytes for it: its buffer and one event`)
  const gone = await full()
  gone.stream.close()
  const feed = (counted as { feed?: { streams: { size: number } } }).feed!
  for (let turns = 0; feed.streams.size > 1 && turns < 100_000; turns++) await turn()
  t.equal(feed.streams.size, 1, 'a client that goes while its socket is full ends its stream')
  stream.response.resume()
  await stream.until(() => stream.state.events.length === total)
  t.same(stream.state.events.map(({ data }) => JSON.parse(data).id), Array.from({ length: total }, (_, i) => i + 1), 'every event, once, in order')
  stream.close()
})

t.test('the app\'s close ends open streams cleanly, at once', async (t) => {
  const { app, url } = await listeningFeed(t)
  const stream = await openStream(`${url}/plants/changes?after=now`, STREAM)
  await app.close()
  await stream.body()
  t.equal(stream.response.complete, true, 'the body ended complete, not cut')
})

t.test('streams and long-polls count against the caps: past them 503 with Retry-After; a stream\'s place is freed when its client goes', async (t) => {
  const { app, counted, url } = await listeningFeed(t, { maxWaiters: 2, maxWaitersPerToken: 1 })
  const stream = await openStream(`${url}/plants/changes?after=now`, STREAM)
  const busy = await openStream(`${url}/plants/changes?after=now`, STREAM)
  t.equal(busy.status, 503)
  t.equal(busy.headers['retry-after'], '1')
  t.same(JSON.parse(await busy.body()), { error: 503, message: new FeedBusyError().message })
  t.equal((await app.inject({ url: '/plants/changes?after=now&wait=5', headers: AUTH })).statusCode, 503, 'a long-poll of the same token too')
  const other = await openStream(`${url}/plants/changes?after=now`, { ...STREAM, authorization: `Bearer ${OTHER_TOKEN}` })
  t.equal(other.status, 200, 'another token has its own')
  t.equal((await app.inject({ url: '/plants/changes?after=now&wait=5', headers: { authorization: `Bearer ${OTHER_TOKEN}` } })).statusCode, 503,
    'and past the process\'s cap, 503 for it too')
  stream.close()
  other.close()
  const feed = (counted as { feed?: { streams: { size: number } } }).feed!
  for (let turns = 0; feed.streams.size > 0 && turns < 100_000; turns++) await turn()
  const again = await openStream(`${url}/plants/changes?after=now`, STREAM)
  t.equal(again.status, 200, 'the token\'s place is free again')
  again.close()
})

t.test('a stream with nothing it wants tells its position in id: lines with no data (at its start, with a heartbeat past skipped rows, ' +
  'at its end): a client resuming from the last id it saw gets what committed in between', async (t) => {
  const { app, clock, config, url } = await listeningFeed(t, { heartbeat: 15_000, streamLifetime: 60_000 })
  await createPlant(app, { id: 1, name: 'a' })
  const idle = await openStream(`${url}/plants/changes?after=now`, STREAM)
  const deletes = await openStream(`${url}/plants/changes?after=now&types=plant.deleted`, STREAM)
  const head = (await page(app, '?after=now')).next
  await clock.advance(config.heartbeatMs)
  // The start's id line goes out before the first heartbeat.
  for (const stream of [idle, deletes]) await stream.until(() => stream.state.comments.length === 1)
  t.same([idle.state.lastEventId, deletes.state.lastEventId], [head, head], 'at the start: the head, before any event')
  await createPlant(app, { id: 2, name: 'b' })
  await idle.until(() => idle.state.events.length === 1)
  await clock.advance(config.heartbeatMs)
  await deletes.until(() => deletes.state.comments.length === 2)
  for (let turns = 0; deletes.state.lastEventId === head && turns < 1000; turns++) await turn()
  t.equal(deletes.state.events.length, 0, 'the filtered stream dispatched no event')
  t.equal(deletes.state.lastEventId, idle.state.events[0].id, 'with the heartbeat, its position moved past the create it skipped')
  await createPlant(app, { id: 3, name: 'c' })
  await clock.advance(config.streamLifetimeMs - 2 * config.heartbeatMs)
  for (const stream of [idle, deletes]) await stream.body()
  t.equal(deletes.state.lastEventId, idle.state.events[1].id, 'at its end: past the last create too')
  // What commits while the clients reconnect: a resume from the last id gets it, where after=now would not.
  await app.inject({ method: 'DELETE', url: '/plants/3', headers: AUTH })
  await createPlant(app, { id: 4, name: 'd' })
  const resumed = await openStream(`${url}/plants/changes?types=plant.deleted`, { ...STREAM, 'last-event-id': deletes.state.lastEventId ?? 'none' })
  await resumed.until(() => resumed.state.events.length === 1)
  t.same(resumed.state.events.map(({ data }) => JSON.parse(data)).map(({ type, id }) => [type, id]), [['plant.deleted', 3]])
  resumed.close()
})

t.test('a stream opened at the head that sees no event till its end: resuming from its last id gets what committed after it ended', async (t) => {
  const { app, clock, config, url } = await listeningFeed(t, { streamLifetime: 1000 })
  const quiet = await openStream(`${url}/plants/changes?after=now`, STREAM)
  await clock.advance(config.streamLifetimeMs)
  await quiet.body()
  t.same(quiet.state.events, [], 'no event')
  t.ok(quiet.state.lastEventId, 'but an id: its position')
  await createPlant(app, { id: 1, name: 'meanwhile' })
  const resumed = await openStream(`${url}/plants/changes`, { ...STREAM, 'last-event-id': quiet.state.lastEventId ?? 'none' })
  t.equal(resumed.status, 200)
  await resumed.until(() => resumed.state.events.length === 1)
  t.same(JSON.parse(resumed.state.events[0].data).name, 'meanwhile', 'the change that committed in between')
  resumed.close()
})

/**
 * A stream's client that goes while `gate` (the feed's first read, or a hook before the handler)
 * holds its request: no stream runs for it, and the next stream of its token is not refused.
 */
async function clientGoneWhileHeld (t: Test, gate: 'gate' | 'hookGate') {
  const { app, counted, responses, url } = await listeningFeed(t, { maxWaitersPerToken: 1, streamLifetime: 1000 })
  for (const id of [1, 2, 3]) await createPlant(app, { id, name: `p${id}` })
  let open!: () => void
  counted[gate] = new Promise((resolve) => { open = resolve })
  const before = responses.length
  const gone = request(`${url}/plants/changes`, { headers: STREAM })
  gone.on('error', () => {})
  gone.end()
  for (let turns = 0; responses.length === before && turns < 100_000; turns++) await turn()
  const closed = once(responses.at(-1)!, 'close')
  gone.destroy()
  await closed
  counted[gate] = undefined
  open()
  // What it held goes on (the first read ends with rows to send), to a socket that is gone.
  for (let turns = 0; turns < 20; turns++) await turn()
  t.equal(feedOf(counted).streams.size, 0, 'no stream runs for it')
  const again = await openStream(`${url}/plants/changes`, STREAM)
  t.equal(again.status, 200, 'its place is free')
  again.close()
}

t.test('a client that goes during the stream\'s first read (a slow store) takes no place', (t) => clientGoneWhileHeld(t, 'gate'))

t.test('a client gone before the handler runs (a slow hook) takes no place', (t) => clientGoneWhileHeld(t, 'hookGate'))

t.test('a reader that stops reading is cut at the stream\'s lifetime: its socket destroyed, its place freed', async (t) => {
  // Events of 100 kB each, 30 MB in all: more than the loopback socket's buffers hold.
  const { app, clock, config, counted, responses, url } = await listeningFeed(t, { maxWaitersPerToken: 1, streamLifetime: 1000 }, 100_000)
  const name = 'x'.repeat(100_000)
  for (let id = 1; id <= 300; id++) await createPlant(app, { id, name })
  const stuck = await openStream(`${url}/plants/changes`, STREAM)
  stuck.response.pause()
  const raw = responses.at(-1)!
  for (let turns = 0; !raw.writableNeedDrain && turns < 100_000; turns++) await turn()
  t.ok(raw.writableNeedDrain, 'the socket is full')
  t.equal((await openStream(`${url}/plants/changes?after=now`, STREAM)).status, 503, 'it holds its token\'s place')
  await clock.advance(config.streamLifetimeMs)
  for (let turns = 0; !raw.destroyed && turns < 1000; turns++) await turn()
  t.ok(raw.destroyed, 'at its lifetime, its socket is destroyed')
  t.equal(feedOf(counted).streams.size, 0)
  const again = await openStream(`${url}/plants/changes?after=now`, STREAM)
  t.equal(again.status, 200, 'its place is free')
  again.close()
  stuck.close()
})

t.test('a stream\'s answer carries the headers the hooks set (CORS, the rate limit\'s): hijack() does not drop them', async (t) => {
  const { url } = await listeningFeed(t)
  const stream = await openStream(`${url}/plants/changes?after=now`, STREAM)
  t.equal(stream.status, 200)
  t.equal(stream.headers['x-hook'], 'set', 'set by an onRequest hook')
  t.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8', 'its own still')
  stream.close()
})
