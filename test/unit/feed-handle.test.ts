/**
 * The host's feed handle on a stub outbox and the fake clock: a store that does not answer is asked
 * again after FEED_RETRY_MS, from the same cursor, so that nothing is missed or given twice; any other
 * failure is the caller's.
 */
import { getEventListeners } from 'node:events'
import t from 'tap'
import { Feed } from '../../plugins/feed/feed.js'
import { FEED_RETRY_MS, FeedHandle } from '../../plugins/feed/handle.js'
import { resolveFeed } from '../../plugins/feed/settings.js'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import type { FeedPosition, FeedRead, WebhookOutbox } from '../../plugins/store/outbox.js'
import { fakeClock } from '../helpers/fake-clock.js'

const START: FeedPosition = { xid: 0n, seq: 0n }
const turns = async (count = 20) => { for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve)) }

/** A feed on an outbox whose reads fail with what `failures` holds, in turn, then answer one event. */
function feedFailing (failures: unknown[]) {
  const clock = fakeClock()
  const reads: Array<FeedPosition | undefined> = []
  const outbox = {
    readFeed: async (after: FeedPosition | undefined): Promise<FeedRead> => {
      reads.push(after)
      if (failures.length > 0) throw failures.shift()
      const rows = after === undefined || after.seq < 1n ? [{ position: { xid: 0n, seq: 1n }, type: 'plant.created' as const, payload: '{"type":"plant.created","id":9223372036854775807}' }] : []
      return { id: '00000000-0000-0000-0000-000000000000', pruned: START, head: START, latest: { xid: 0n, seq: 1n }, rows }
    }
  } as unknown as WebhookOutbox
  const feed = new Feed(resolveFeed({})!, clock)
  feed.attach(outbox)
  const handle = new FeedHandle()
  handle.attach(feed)
  return { clock, feed, handle, reads }
}

t.test('a store that does not answer is asked again after each wait of FEED_RETRY_MS, from the same cursor', async (t) => {
  const { clock, handle, reads } = feedFailing([new StoreUnavailableError(), new StoreUnavailableError()])
  let got: unknown
  const next = handle.changes().next().then((result) => { got = result.value })
  await turns()
  t.equal(reads.length, 1, 'read once, failed')
  await clock.advance(FEED_RETRY_MS[0] - 1)
  t.equal(reads.length, 1, 'not again before the first wait')
  await clock.advance(1)
  await turns()
  t.equal(reads.length, 2, 'again after it, and failed again')
  await clock.advance(FEED_RETRY_MS[1])
  await next
  t.same(reads, [undefined, undefined, undefined], 'each time from where it was')
  t.match(got, { event: { id: 9223372036854775807n } }, 'then the change, its id exact')
})

t.test('any other failure is thrown to the caller', async (t) => {
  const { handle } = feedFailing([new Error('a bug')])
  await t.rejects(handle.changes().next(), { message: 'a bug' })
})

t.test('a retry wait ends with the app, and the iteration with it', async (t) => {
  const { feed, handle } = feedFailing([new StoreUnavailableError()])
  const next = handle.changes().next()
  await turns()
  await feed.close()
  t.same(await next, { value: undefined, done: true })
})

t.test('a signal aborted while the store fails ends the iteration without its retry wait', async (t) => {
  const { handle, reads } = feedFailing([new StoreUnavailableError()])
  const stop = new AbortController()
  const next = handle.changes({ signal: stop.signal }).next()
  stop.abort()
  t.same(await next, { value: undefined, done: true })
  t.equal(reads.length, 1, 'not read again')
})

t.test('a feed whose outbox is not attached yet (webhooks open it as the app gets ready) is refused as off', async (t) => {
  const handle = new FeedHandle()
  handle.attach(new Feed(resolveFeed({})!, fakeClock()))
  await t.rejects(handle.changes().next(), { message: /the change feed is off, or not ready/ })
})

t.test('a retry wait ends with its signal, and leaves no listener on the app\'s closing signal', async (t) => {
  const { clock, feed, handle } = feedFailing([new StoreUnavailableError(), new StoreUnavailableError()])
  const stop = new AbortController()
  const next = handle.changes({ signal: stop.signal }).next()
  await turns()
  await clock.advance(FEED_RETRY_MS[0])
  await turns()
  stop.abort()
  t.same(await next, { value: undefined, done: true })
  t.equal(getEventListeners(feed.closing.signal, 'abort').length, 0)
})
