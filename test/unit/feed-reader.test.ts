/**
 * The feed's shared reader on a stub outbox and the fake clock: one read per wake-up for every
 * waiter, a wake-up during a read read again after it, a full read followed by another, a failed
 * read left to the idle poll; and the order of positions across PostgreSQL transaction ids.
 */
import { getEventListeners } from 'node:events'
import t from 'tap'
import { decodeCursor, encodeCursor } from '../../plugins/feed/cursor.js'
import { FeedCursorGoneError } from '../../plugins/feed/errors.js'
import { Feed } from '../../plugins/feed/feed.js'
import { FeedReader } from '../../plugins/feed/reader.js'
import { resolveFeed } from '../../plugins/feed/settings.js'
import { comparePositions, type FeedPosition, type FeedRead, type FeedRow, type WebhookOutbox } from '../../plugins/store/outbox.js'
import { fakeClock } from '../helpers/fake-clock.js'

const row = (seq: number, xid = 0): FeedRow => ({ position: { xid: BigInt(xid), seq: BigInt(seq) }, type: 'plant.created', payload: `{"id":${seq}}` })
const START: FeedPosition = { xid: 0n, seq: 0n }
const turns = async (count = 20) => { for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve)) }

/** A stub outbox whose reads answer `answer(after, limit)`, counted. */
function stubOutbox (answer: (after: FeedPosition | undefined, limit: number) => Promise<FeedRow[]>) {
  const reads: Array<FeedPosition | undefined> = []
  const outbox = {
    readFeed: async (after: FeedPosition | undefined, limit: number): Promise<FeedRead> => {
      reads.push(after)
      return { id: 'f', pruned: START, head: START, latest: START, rows: await answer(after, limit) }
    }
  } as unknown as WebhookOutbox
  return { outbox, reads }
}

t.test('one read serves every waiter; a wake-up during a read reads once more after it', async (t) => {
  const clock = fakeClock()
  let release: (() => void) | undefined
  let rows: FeedRow[] = []
  const { outbox, reads } = stubOutbox(async () => {
    await new Promise<void>((resolve) => { release = resolve })
    return rows
  })
  const reader = new FeedReader(outbox, clock, 1000)
  const first = reader.wait({ after: START, types: undefined, limit: 10 }, 30_000)
  const second = reader.wait({ after: START, types: new Set(['plant.created']), limit: 10 }, 30_000)
  reader.wake()
  reader.wake()
  t.equal(reads.length, 1, 'one read for both, a second wake-up waits for it')
  release!()
  await turns()
  t.equal(reads.length, 2, 'then read again')
  rows = [row(1)]
  release!()
  t.same((await Promise.all([first, second])).map(({ rows }) => rows.length), [1, 1], 'both handed the change')
})

t.test('a full read is followed by another at once; a waiter gets at most its limit', async (t) => {
  const clock = fakeClock()
  const all = Array.from({ length: 1500 }, (_, i) => row(i + 1))
  const { outbox, reads } = stubOutbox(async (after, limit) => all.filter(({ position }) => position.seq > after!.seq).slice(0, limit))
  const reader = new FeedReader(outbox, clock, 1000)
  const late = { after: { xid: 0n, seq: 1200n }, types: undefined, limit: 5 }
  const waiting = reader.wait(late, 30_000)
  const early = reader.wait({ after: START, types: new Set(['plant.deleted']), limit: 5 }, 30_000)
  reader.wake()
  t.same((await waiting).rows.map(({ position }) => position.seq), [1201n, 1202n, 1203n, 1204n, 1205n], 'its limit, after its own position')
  await turns()
  t.ok(reads.length >= 2, 'the full read was followed by another')
  await clock.advance(30_000)
  t.same(await early, { rows: [], next: { xid: 0n, seq: 1500n } }, 'no match: the wait ran out, past every change it skipped')
})

t.test('a read that fails is left to the idle poll, which reads again while anyone waits', async (t) => {
  const clock = fakeClock()
  let fail = true
  const { outbox, reads } = stubOutbox(async () => {
    if (fail) throw new Error('down')
    return [row(1)]
  })
  const reader = new FeedReader(outbox, clock, 1000)
  const waiting = reader.wait({ after: START, types: undefined, limit: 10 }, 30_000)
  reader.wake()
  await turns()
  t.equal(reads.length, 1)
  fail = false
  await clock.advance(1000)
  t.same((await waiting).rows, [row(1)], 'the idle poll read it')
  t.equal(clock.pending(), 0, 'no timer once nobody waits')
})

t.test('a wait whose signal aborted already ends at once, with no change', async (t) => {
  const reader = new FeedReader(stubOutbox(async () => []).outbox, fakeClock(), 1000)
  t.same(await reader.wait({ after: START, types: undefined, limit: 1 }, 30_000, [AbortSignal.abort()]), { rows: [], next: START })
})

t.test('a waiter that comes during a read, from before where it began, is not handed that read: it is read for again', async (t) => {
  const clock = fakeClock()
  const events = [1, 2, 3, 4, 5, 6].map((seq) => row(seq))
  let release: (() => void) | undefined
  const { outbox, reads } = stubOutbox(async (after) => {
    const rows = events.filter(({ position }) => position.seq > (after?.seq ?? 0n))
    if (reads.length === 1) await new Promise<void>((resolve) => { release = resolve })
    return rows
  })
  const reader = new FeedReader(outbox, clock, 1000)
  const atFive = reader.wait({ after: row(5).position, types: undefined, limit: 10 }, 30_000)
  reader.wake()
  await turns()
  t.equal(reads.length, 1, 'a read from 5 is under way')
  const atTwo = reader.wait({ after: row(2).position, types: undefined, limit: 10 }, 30_000)
  release!()
  t.same((await atFive).rows, [row(6)], 'the waiter it began for gets its change')
  t.same((await atTwo).rows, [row(3), row(4), row(5), row(6)], 'the later one gets every change after 2, none skipped')
  t.same(reads.map((after) => after?.seq), [5n, 2n], 'read again from 2')
})

t.test('a waiter past whose position the store pruned ends gone; one after the pruned mark is served', async (t) => {
  const pruned = row(10).position
  const outbox = {
    readFeed: async (): Promise<FeedRead> => ({ id: 'f', pruned, head: START, latest: START, rows: [row(11)] })
  } as unknown as WebhookOutbox
  const reader = new FeedReader(outbox, fakeClock(), 1000)
  const behind = reader.wait({ after: row(4).position, types: undefined, limit: 10 }, 30_000)
  const after = reader.wait({ after: pruned, types: undefined, limit: 10 }, 30_000)
  reader.wake()
  t.same(await behind, { rows: [], next: row(4).position, gone: true })
  t.same((await after).rows, [row(11)])
})

t.test('a wait adds one listener to each signal and takes it away when it ends, however it ends', async (t) => {
  const clock = fakeClock()
  const reader = new FeedReader(stubOutbox(async () => [row(1)]).outbox, clock, 1000)
  const closing = new AbortController()
  const ends = [
    async () => { const waiting = reader.wait({ after: START, types: undefined, limit: 1 }, 30_000, [closing.signal]); reader.wake(); await waiting },
    async () => { const waiting = reader.wait({ after: row(1).position, types: undefined, limit: 1 }, 100, [closing.signal]); await clock.advance(100); await waiting },
    async () => {
      const mine = new AbortController()
      const waiting = reader.wait({ after: row(1).position, types: undefined, limit: 1 }, 30_000, [mine.signal, closing.signal])
      mine.abort()
      await waiting
    }
  ]
  for (const end of ends) for (let i = 0; i < 20; i++) await end()
  t.equal(getEventListeners(closing.signal, 'abort').length, 0, 'no listener left on the signal that outlives the waits (60 waits)')
})

t.test('a wake-up between a caller\'s own read and its wait reads again at once: that commit is not left to the idle poll', async (t) => {
  const clock = fakeClock()
  let rows: FeedRow[] = []
  const { outbox, reads } = stubOutbox(async () => rows)
  const reader = new FeedReader(outbox, clock, 1000)
  const seen = reader.wakes
  rows = [row(1)]
  reader.wake() // a commit, with nobody waiting yet
  t.same((await reader.wait({ after: START, types: undefined, limit: 1 }, 30_000, [], seen)).rows, [row(1)], 'served without the clock moving')
  t.equal(reads.length, 1)
  const none = reader.wait({ after: row(1).position, types: undefined, limit: 1 }, 30_000, [], reader.wakes)
  await turns()
  t.equal(reads.length, 1, 'no read when nothing woke it since')
  await clock.advance(30_000)
  await none
})

t.test('positions order by transaction id, then seq; a cursor is its feed and position, anything else none', async (t) => {
  t.same([comparePositions(row(5, 1).position, row(1, 2).position), comparePositions(row(1, 2).position, row(5, 1).position),
    comparePositions(row(1, 2).position, row(1, 2).position)], [-1, 1, 0])
  const id = '5b2c7a50-0f6e-4d0a-9a53-1c9e2b7c1d11'
  t.same(decodeCursor(encodeCursor(id, { xid: 18446744073709551615n, seq: 9223372036854775807n })), { id, position: { xid: 18446744073709551615n, seq: 9223372036854775807n } })
  for (const text of ['***', '', Buffer.from(`${id}.1`).toString('base64url'), Buffer.from(`${id}.01.1`).toString('base64url'),
    Buffer.from(`${id}.0.9223372036854775808`).toString('base64url'), Buffer.from(`${id}.18446744073709551616.1`).toString('base64url')]) {
    t.equal(decodeCursor(text), undefined, text)
  }
})

t.test('the feed turns a position the store pruned past into FeedCursorGoneError: in a catch-up read and in a wait', async (t) => {
  const pruned = row(10).position
  const outbox = { readFeed: async (): Promise<FeedRead> => ({ id: 'f', pruned, head: pruned, latest: pruned, rows: [] }) } as unknown as WebhookOutbox
  const feed = new Feed(resolveFeed({})!, fakeClock())
  feed.attach(outbox)
  const behind = { after: row(4).position, types: undefined, limit: 10 }
  await t.rejects(feed.readAfter(behind), FeedCursorGoneError, 'a stream catching up')
  const waiting = feed.wait(behind, 30_000)
  feed.committed()
  await t.rejects(waiting, FeedCursorGoneError, 'a waiter')
})
