/**
 * The PostgreSQL feed under concurrent writers: transactions commit in another order than their
 * events were numbered, on one instance or several, and a follower still sees every committed
 * event exactly once, each plant's own in order.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { outboxTables, insertWithEventsSql } from '../../plugins/store/postgres/outbox.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import type { FeedPosition, FeedRow, WebhookOutbox } from '../../plugins/store/outbox.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'
import { connect, freshDatabase, postgresSkip, untilSessionWaitsForLock } from '../helpers/postgres.js'

const skip = await postgresSkip()
const withFeed = { endpoints: [], payloads: eventPayloads, feed: true }

/** A follower: reads on from its position, keeping what it saw. */
function follower (outbox: WebhookOutbox) {
  let position: FeedPosition | undefined
  const seen: FeedRow[] = []
  return {
    seen,
    async read () {
      for (;;) {
        const { rows } = await outbox.readFeed(position, 100)
        if (rows.length === 0) return
        seen.push(...rows)
        position = rows.at(-1)!.position
      }
    },
    /**
     * Reads until it has seen `count` events: another session of the test server (another test's
     * transaction) may hold the snapshot's xmin back for a moment, and the feed then waits behind it.
     */
    async readUntil (count: number) {
      for (let tries = 0; tries < 500 && seen.length < count; tries++) {
        await this.read()
        if (seen.length < count) await sleep(20)
      }
    }
  }
}

const idOf = (row: FeedRow) => (JSON.parse(row.payload.replace(/"id":(-?\d+)/, '"id":"$1"')) as { id: string }).id

t.test('a create whose transaction commits after later ones is read after them, once, none skipped', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  const outbox = await store.openOutbox(withFeed)
  await store.create({ id: 1n, name: 'before' })
  const follow = follower(outbox)
  await follow.readUntil(1)
  // Another writer's create (the store's own statement), its transaction held open.
  const held = await connect(url)
  t.teardown(() => held.end())
  await held.query('BEGIN')
  const at = new Date()
  await held.query(insertWithEventsSql('"public"."plants"', outboxTables({ table: 'plants' }), true),
    [[100n], ['held'], [null], eventPayloads.createdHead(at), JSON.stringify(['msg_held']), at, [], null])
  await store.create({ id: 2n, name: 'after' })
  await store.create({ id: 3n, name: 'after' })
  await follow.read()
  t.same(follow.seen.map(idOf), ['1'], 'the later commits wait behind the one still running: nothing is read past it')
  await held.query('COMMIT')
  await follow.readUntil(4)
  t.same(follow.seen.map(idOf), ['1', '100', '2', '3'], 'each exactly once, the held one included')
  const { head } = await outbox.readFeed(undefined, 1)
  t.same((await outbox.readFeed(head, 10)).rows, [], 'nothing after the head')
})

t.test('a held transaction that rolls back leaves nothing, and the follower goes on', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  const outbox = await store.openOutbox(withFeed)
  const follow = follower(outbox)
  const held = await connect(url)
  t.teardown(() => held.end())
  await held.query('BEGIN')
  await held.query('SELECT pg_current_xact_id()')
  await store.create({ id: 2n, name: 'after' })
  await follow.read()
  t.same(follow.seen, [])
  await held.query('ROLLBACK')
  await follow.readUntil(1)
  t.same(follow.seen.map(idOf), ['2'])
})

t.test('two stores on one database writing at once: a follower sees every event exactly once, each plant\'s in order', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const stores = [await openPostgresStore(url), await openPostgresStore(url)]
  t.teardown(() => Promise.all(stores.map((store) => store.close())))
  const [outbox] = await Promise.all(stores.map((store) => store.openOutbox(withFeed)))
  const follow = follower(outbox)
  let writing = true
  let deletes = 0
  const following = (async () => {
    // eslint-disable-next-line no-unmodified-loop-condition -- set by the writers, awaited between reads
    while (writing) await follow.read()
  })()
  await Promise.all(stores.map(async (store, n) => {
    for (let round = 0; round < 20; round++) {
      const ids = Array.from({ length: 10 }, (_, i) => BigInt(n * 1000 + round * 10 + i))
      await Promise.all(ids.map((id) => store.create({ id, name: `p${id}` })))
      const doomed = ids.filter((id) => id % 3n === 0n)
      deletes += doomed.length
      await Promise.all(doomed.map((id) => store.delete(id)))
    }
  }))
  writing = false
  await following
  await follow.readUntil(400 + deletes)
  const keys = follow.seen.map((row) => `${row.type} ${idOf(row)}`)
  t.equal(new Set(keys).size, keys.length, 'none twice')
  t.equal(keys.filter((key) => key.startsWith('plant.created')).length, 400, 'every create')
  t.equal(keys.filter((key) => key.startsWith('plant.deleted')).length, deletes, 'every delete')
  const created = new Map(keys.map((key, i) => [key, i]))
  t.ok(keys.every((key, i) => !key.startsWith('plant.deleted') || created.get(key.replace('deleted', 'created'))! < i), 'each delete after its create')
})

t.test('a batch of updates that waits for another session\'s row lock does not list a plant\'s updates out of order', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const database = new URL(url).pathname.slice(1)
  const [a, b] = [await openPostgresStore(url), await openPostgresStore(url)]
  t.teardown(() => Promise.all([a.close(), b.close()]))
  const outbox = await a.openOutbox(withFeed)
  await b.openOutbox(withFeed)
  for (const id of [5n, 7n, 9n]) await a.create({ id, name: 'start' })
  const blocker = await connect(url)
  const monitor = await connect(url)
  t.teardown(() => Promise.all([blocker.end(), monitor.end()]))
  await blocker.query('BEGIN')
  await blocker.query('SELECT 1 FROM plants WHERE id = 7 FOR UPDATE')
  // One turn of A: one statement for 5, 7 and 9, which locks 5 (its transaction id taken) and waits at 7.
  const batch = Promise.all([5n, 7n, 9n].map((id) => a.update(id, { name: 'from A' })))
  await untilSessionWaitsForLock(monitor, database)
  // Meanwhile B writes 9, which A's statement has not locked yet.
  t.same(await b.update(9n, { name: 'from B' }), { name: 'from B' })
  await blocker.query('COMMIT')
  await batch
  const stored = (await a.get(9n))!.name
  const follow = follower(outbox)
  await follow.readUntil(6)
  const nines = follow.seen.filter((row) => idOf(row) === '9').map(({ payload }) => (JSON.parse(payload) as { name: string }).name)
  t.equal(nines.length, 3, 'created, then two updates')
  t.equal(nines.at(-1), stored, `plant 9's last event is what the store holds (${stored}); the feed listed ${nines.join(', ')}`)
})
