import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FeedPosition, OutboxOptions, OutboxStore, WebhookOutbox } from '../../plugins/store/outbox.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'
import { fakeClock } from './fake-clock.js'

type FeedStore = PlantStore & OutboxStore

export interface FeedContractOptions {
  test: (name: string, run: () => Promise<void>) => unknown
  /** A new, empty store. */
  open: () => Promise<FeedStore>
  /** A store on storage kept between opens (a file, a database): a function that opens it again. */
  storage?: () => Promise<() => Promise<FeedStore>>
}

const withFeed = (extra: Partial<OutboxOptions> = {}): OutboxOptions => ({ endpoints: [], payloads: eventPayloads, feed: true, ...extra })

/**
 * Every event of the feed after `after`, page by page; with `expected`, read again until there are
 * that many (on PostgreSQL another session of the test server may hold the snapshot's xmin back a moment).
 */
export async function readAll (outbox: WebhookOutbox, after?: FeedPosition, expected = 0) {
  const rows = []
  let position = after
  for (let tries = 0; tries < 500; tries++) {
    const { rows: page } = await outbox.readFeed(position, 2)
    rows.push(...page)
    position = page.at(-1)?.position ?? position
    if (page.length === 0 && rows.length >= expected) return rows
    if (page.length === 0) await sleep(20)
  }
  return rows
}

/** The change feed as each store keeps it (events written with the feed on, read in order, pruned with a mark). */
export function feedContract ({ test, open, storage }: FeedContractOptions): void {
  const withStore = (name: string, run: (store: FeedStore) => Promise<void>) => test(name, async () => {
    const store = await open()
    try {
      await run(store)
    } finally {
      await store.close()
    }
  })

  withStore('with the feed on and no endpoint, every create, update and delete writes its event, read in order with the webhook body\'s text', async (store) => {
    const clock = fakeClock()
    const told: string[] = []
    const outbox = await store.openOutbox(withFeed({ clock, committed: (type, count) => told.push(`${type} ${count}`) }))
    const empty = await outbox.readFeed(undefined, 10)
    assert.deepEqual(empty.rows, [], 'nothing yet')
    await store.create({ id: 1n, name: 'fern' })
    await Promise.all([store.create({ id: 2n, name: 'rose', tag: 'red' }), store.create({ id: 2n, name: 'again' })].map((p) => p.catch(() => {})))
    assert.equal(await store.delete(1n), true)
    assert.equal(await store.delete(1n), false, 'a delete that deleted nothing writes nothing')
    assert.equal(await store.update!(1n, { name: 'gone' }), 'not-found', 'an update that updated nothing writes nothing')
    await store.update!(2n, { name: 'rose', tag: 'pink' })
    const at = new Date(clock.now())
    const rows = await readAll(outbox, undefined, 4)
    assert.deepEqual(rows.map(({ type, payload }) => [type, payload]), [
      ['plant.created', eventPayloads.created({ id: 1n, name: 'fern' }, at)],
      ['plant.created', eventPayloads.created({ id: 2n, name: 'rose', tag: 'red' }, at)],
      ['plant.deleted', eventPayloads.deleted(1n, at)],
      ['plant.updated', eventPayloads.updated({ id: 2n, name: 'rose', tag: 'pink' }, at)]
    ])
    assert.deepEqual(told, ['plant.created 1', 'plant.created 1', 'plant.deleted 1', 'plant.updated 1'], 'each commit told')
    const read = await outbox.readFeed(rows[0].position, 1)
    assert.deepEqual(read.rows, [rows[1]], 'after a position, up to the limit')
    assert.deepEqual(await readAll(outbox, read.head), [], 'nothing after the head')
    assert.ok(typeof read.id === 'string' && read.id.length > 0, 'an identity')
    assert.deepEqual(read.latest.xid >= read.head.xid, true)
    assert.deepEqual((await outbox.events({ limit: 10 })).map(({ deliveries }) => deliveries), [[], [], [], []], 'no delivery without an endpoint')
  })

  withStore('with the feed off, no endpoint taking a type writes no event of it', async (store) => {
    const outbox = await store.openOutbox({ endpoints: [{ name: 'e', events: ['plant.deleted'] }], payloads: eventPayloads })
    await store.create({ id: 1n, name: 'fern' })
    await store.update!(1n, { name: 'fern', tag: 'green' })
    await store.delete(1n)
    assert.deepEqual((await readAll(outbox, undefined, 1)).map(({ type }) => type), ['plant.deleted'])
  })

  withStore('prune removes old finished events and marks the feed: a read from the start begins after the mark', async (store) => {
    const clock = fakeClock()
    const outbox = await store.openOutbox(withFeed({ clock, endpoints: [{ name: 'e', events: ['plant.deleted'] }] }))
    await store.create({ id: 1n, name: 'old' })
    await store.create({ id: 2n, name: 'old' })
    await store.delete(2n)
    await clock.advance(60_000)
    await store.create({ id: 3n, name: 'new' })
    const [first, second, pending, young] = await readAll(outbox, undefined, 4)
    assert.equal(await outbox.prune(new Date(clock.now() - 1000)), 2, 'the two old finished ones')
    const read = await outbox.readFeed(undefined, 10)
    assert.deepEqual(read.pruned, second.position, 'the latest position pruned')
    assert.deepEqual(read.rows, [pending, young], 'kept: the one a delivery needs, and the young one')
    assert.ok(first.position.seq < second.position.seq)
    assert.equal(await outbox.prune(new Date(clock.now() - 1000)), 0)
    assert.deepEqual((await outbox.readFeed(undefined, 10)).pruned, second.position, 'a prune of nothing leaves the mark')
  })

  if (storage === undefined) return
  test('the feed\'s identity is kept with the store, and another store has another', async () => {
    const reopen = await storage()
    let store = await reopen()
    const first = await (await store.openOutbox(withFeed())).readFeed(undefined, 1)
    await store.create({ id: 1n, name: 'fern' })
    await store.close()
    store = await reopen()
    const reopened = await store.openOutbox(withFeed())
    const again = await reopened.readFeed(undefined, 1)
    const kept = await readAll(reopened, undefined, 1)
    await store.close()
    assert.equal(again.id, first.id)
    assert.equal(kept.length, 1, 'the event kept')
    const other = await open()
    try {
      assert.notEqual((await (await other.openOutbox(withFeed())).readFeed(undefined, 1)).id, first.id)
    } finally {
      await other.close()
    }
  })
}
