import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { INT64_MAX, INT64_MIN } from '../../schemas/index.js'
import { PlantExistsError } from '../../plugins/http/errors.js'
import { plantCreatedHead, plantCreatedPayload, plantDeletedPayload, plantUpdatedPayload } from '../../plugins/webhooks/delivery/payload.js'
import type {
  AttemptRecord, ClaimedDelivery, EventPayloads, EventView, OutboxEndpoint, OutboxStore, WebhookOutbox
} from '../../plugins/store/outbox.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { revisionOf } from '../../plugins/store/revision.js'
import type { Plant } from '../../schemas/index.js'
import { fakeClock } from './fake-clock.js'

export type OutboxPlantStore = PlantStore & OutboxStore
type FakeClock = ReturnType<typeof fakeClock>

export interface OutboxContractOptions {
  /** Registers one named test: node:test's `test`, tap's `t.test`, vitest's `test`... */
  test: (name: string, run: () => Promise<void>) => unknown
  /** Opens a new, empty store whose outbox is not yet opened; the contract closes it after each test. */
  open: () => Promise<OutboxPlantStore>
  /**
   * For a durable store: makes new, empty storage and resolves a function that opens a store on
   * it; each call opens the same storage again (the contract closes the previous store first).
   */
  storage?: () => Promise<() => Promise<OutboxPlantStore>>
}

const BOTH = ['plant.created', 'plant.deleted'] as const
const ENDPOINTS: Record<string, OutboxEndpoint> = {
  all: { name: 'all', events: BOTH },
  created: { name: 'created', events: ['plant.created'] },
  deleted: { name: 'deleted', events: ['plant.deleted'] }
}
const endpointsNamed = (...names: string[]) => names.map((name) => ENDPOINTS[name])
const LONG_LEASE_MS = 60_000

/**
 * The payloads of plugins/webhooks/delivery/payload.ts, recording the commit time each was made with (a store that
 * writes the plants' part itself asks for a commit's head instead: no id then).
 */
function recordingPayloads () {
  const made: Array<{ type: string, id?: bigint, at: Date }> = []
  const messageIds: string[] = []
  const payloads: EventPayloads = {
    created (plant, at) {
      made.push({ type: 'plant.created', id: plant.id, at })
      return plantCreatedPayload(plant, at)
    },
    createdHead (at) {
      made.push({ type: 'plant.created', at })
      return plantCreatedHead(at)
    },
    deleted (id, at) {
      made.push({ type: 'plant.deleted', id, at })
      return plantDeletedPayload(id, at)
    },
    updated (plant, at) {
      made.push({ type: 'plant.updated', id: plant.id, at })
      return plantUpdatedPayload(plant, at)
    },
    messageId () {
      const id = `msg_contract${messageIds.length + 1}`
      messageIds.push(id)
      return id
    }
  }
  return { made, messageIds, payloads }
}

/** The value with every undefined property left out: an absent optional field either way. */
function defined (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(defined)
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined).map(([key, field]) => [key, defined(field)]))
}
const same = (actual: unknown, expected: unknown, message?: string) => assert.deepEqual(defined(actual), defined(expected), message)

/** Every event, paged through. */
async function allEvents (outbox: WebhookOutbox): Promise<EventView[]> {
  const events: EventView[] = []
  for (;;) {
    const page = await outbox.events({ after: events.at(-1)?.seq, limit: 2 })
    if (page.length === 0) return events
    events.push(...page)
  }
}

const idOf = (event: EventView) => BigInt(/"id":(-?\d+)/.exec(event.payload)![1])
const byKey = (deliveries: readonly ClaimedDelivery[]) => deliveries.map(({ seq, endpoint }) => `${endpoint}:${seq}`).sort()

function attempt (delivery: ClaimedDelivery, fields: Partial<AttemptRecord> & Pick<AttemptRecord, 'outcome' | 'next'>): AttemptRecord {
  const { seq, endpoint, claim } = delivery
  return { seq, endpoint, claim, at: new Date(), durationMs: 12, ...fields }
}
const retryIn = (ms: number) => ({ state: 'pending', dueAt: new Date(Date.now() + ms) } as const)

/**
 * The outbox, as tests, for any store that keeps one (plugins/store/outbox.ts): the memory,
 * SQLite and PostgreSQL stores pass it. Everything goes through the WebhookOutbox interface.
 * One decision it fixes: an event is written only when some configured endpoint subscribes to
 * its type (a delete writes nothing when none asked for plant.deleted).
 */
export function outboxContract ({ test, open, storage }: OutboxContractOptions): void {
  // With `fakeTime`, the outbox's clock is a fake one that only the test moves.
  const withOutbox = (name: string, names: string[], run: (store: OutboxPlantStore, outbox: WebhookOutbox,
    recorded: ReturnType<typeof recordingPayloads>, clock: FakeClock) => Promise<void>, { fakeTime = false } = {}) => test(name, async () => {
    const store = await open()
    try {
      const recorded = recordingPayloads()
      const clock = fakeClock()
      const outbox = await store.openOutbox({ endpoints: endpointsNamed(...names), payloads: recorded.payloads, ...(fakeTime && { clock }) })
      await run(store, outbox, recorded, clock)
    } finally {
      await store.close()
    }
  })

  withOutbox('each acknowledged create has one event, made at its commit, with one pending delivery per endpoint subscribed to plant.created',
    ['all', 'created', 'deleted'], async (store, outbox, { made, messageIds }) => {
      const before = Date.now()
      await store.create({ id: 1n, name: 'fern' })
      await store.create({ id: 2n, name: 'rose', tag: 'flower' })
      const after = Date.now()
      const events = await allEvents(outbox)
      assert.equal(events.length, 2, 'two events')
      assert.ok(events[0].seq < events[1].seq, 'seq increases with the commits')
      const perPlant = made.every(({ id }) => id !== undefined)
      assert.deepEqual(made.map(({ type, id }) => [type, id]), perPlant ? [['plant.created', 1n], ['plant.created', 2n]] : [['plant.created', undefined], ['plant.created', undefined]],
        'one payload (or head, for a create alone in its commit) made per create')
      assert.deepEqual(events.map(({ messageId }) => messageId), messageIds, 'message ids from payloads.messageId, one per event')
      for (const [i, plant] of [{ id: 1n, name: 'fern' }, { id: 2n, name: 'rose', tag: 'flower' }].entries()) {
        const event = events[i]
        assert.equal(event.type, 'plant.created')
        assert.ok(event.createdAt.getTime() >= before && event.createdAt.getTime() <= after, 'created at the commit')
        assert.equal(made[i].at.getTime(), event.createdAt.getTime(), 'the payload is made with the commit time')
        assert.equal(event.payload, plantCreatedPayload(plant, event.createdAt), 'the payload as made, byte for byte')
        assert.deepEqual(event.deliveries.map(({ endpoint }) => endpoint), ['all', 'created'], 'deliveries in endpoint name order')
        for (const delivery of event.deliveries) {
          assert.equal(delivery.state, 'pending')
          assert.equal(delivery.attempts, 0)
          assert.ok(delivery.dueAt !== undefined && delivery.dueAt.getTime() <= Date.now(), 'due at once')
          assert.deepEqual(delivery.history, [])
        }
        same(await outbox.event(event.seq), event, 'event(seq) gives the same view')
      }
      assert.equal(await outbox.event(events[1].seq + 1000n), undefined, 'an unknown seq')
    })

  withOutbox('an event\'s text is plantCreatedPayload\'s byte for byte, whatever the plant holds, in one commit or apart',
    ['created'], async (store, outbox) => {
      const controls = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('')
      const plants = [
        { id: -(2n ** 63n), name: `quote " backslash \\ slash / ${controls} del \x7f`, tag: '' },
        { id: 2n ** 63n - 1n, name: 'line\u2028para\u2029 bom\ufeff \u{1f331} 植物 ümlaut', tag: '"\\n"' },
        { id: 2n ** 53n + 1n, name: '</script>' },
        { id: 0n, name: 'x'.repeat(1000), tag: 't'.repeat(1000) }
      ]
      await Promise.all(plants.slice(0, 2).map((plant) => store.create(plant)))
      for (const plant of plants.slice(2)) await store.create(plant)
      const events = await allEvents(outbox)
      assert.equal(events.length, plants.length)
      for (const event of events) {
        const plant = plants.find(({ id }) => id === idOf(event))!
        assert.equal(event.payload, plantCreatedPayload(plant, event.createdAt), `plant ${plant.id}`)
      }
    })

  test('each event keeps the trace context its create, update or delete was called in (traceContext), and a claim hands it back', async () => {
    const store = await open()
    try {
      const caller = new AsyncLocalStorage<string>()
      const outbox = await store.openOutbox({ endpoints: endpointsNamed('all'), payloads: recordingPayloads().payloads, traceContext: () => caller.getStore() })
      const [created, deleted] = ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']
      // In one batch: a create with a context and one without.
      await Promise.all([caller.run(created, () => store.create({ id: 1n, name: 'traced' })), store.create({ id: 2n, name: 'untraced' })])
      await caller.run(deleted, () => store.delete(1n))
      // A delete under a precondition (its own statement on PostgreSQL), after an update, in a context of its own.
      const [updated, deletedIf] = ['00-11111111111111111111111111111111-2222222222222222-01', '00-33333333333333333333333333333333-4444444444444444-01']
      const revision = revisionOf(await caller.run(updated, () => store.update!(2n, { name: 'updated' })) as Plant)!
      await caller.run(deletedIf, () => store.delete(2n, { ifRevision: [revision] }))
      const claimed = await outbox.claim([{ endpoint: 'all', limit: 10 }], LONG_LEASE_MS)
      same(claimed.map(({ type, payload, traceContext }) => [type, /"id":(\d+)/.exec(payload)![1], traceContext]).sort(),
        // The endpoint takes created and deleted: the update writes no event.
        [['plant.created', '1', created], ['plant.created', '2', undefined], ['plant.deleted', '1', deleted], ['plant.deleted', '2', deletedIf]].sort())
    } finally {
      await store.close()
    }
  })

  withOutbox('a duplicate create (409) writes no event', ['created'], async (store, outbox) => {
    await store.create({ id: 7n, name: 'first' })
    await assert.rejects(store.create({ id: 7n, name: 'second' }), PlantExistsError)
    const events = await allEvents(outbox)
    assert.deepEqual(events.map(({ payload }) => payload), [plantCreatedPayload({ id: 7n, name: 'first' }, events[0].createdAt)])
  })

  withOutbox('creates arriving together (one batch, repeated ids in it): one event per stored plant', ['created'], async (store, outbox) => {
    const plants = [10n, 11n, 10n, 12n, 11n, 10n, 13n].map((id, index) => ({ id, name: `plant ${index}` }))
    const results = await Promise.allSettled(plants.map((plant) => store.create(plant)))
    const stored = plants.filter((_, index) => results[index].status === 'fulfilled')
    assert.deepEqual(stored.map(({ id }) => id).sort(), [10n, 11n, 12n, 13n], 'each id stored once')
    assert.ok(results.every((result) => result.status === 'fulfilled' || result.reason instanceof PlantExistsError), 'the rest are 409s')
    const events = await allEvents(outbox)
    assert.deepEqual(events.map(idOf).sort(), [10n, 11n, 12n, 13n], 'one event per stored plant')
    for (const event of events) {
      const plant = stored.find(({ id }) => id === idOf(event))!
      assert.equal(event.payload, plantCreatedPayload(plant, event.createdAt), `the event of ${plant.id} carries the stored plant`)
    }
  })

  withOutbox('a burst of 150 creates at once: each has its event and a pending delivery per endpoint, with unique seqs', ['all', 'created', 'deleted'], async (store, outbox) => {
    const plants = Array.from({ length: 150 }, (_, index) => ({ id: BigInt(1000 - 3 * index), name: `burst ${index}`, ...(index % 2 === 0 && { tag: `t${index}` }) }))
    await Promise.all(plants.map((plant) => store.create(plant)))
    const events = await allEvents(outbox)
    assert.equal(events.length, plants.length, 'one event per create')
    assert.equal(new Set(events.map(({ seq }) => seq)).size, plants.length, 'each its own seq')
    for (const event of events) {
      const plant = plants.find(({ id }) => id === idOf(event))!
      assert.equal(event.payload, plantCreatedPayload(plant, event.createdAt), `the event of ${plant.id} carries its plant`)
      assert.deepEqual(event.deliveries.map(({ endpoint, state, attempts }) => [endpoint, state, attempts]), [['all', 'pending', 0], ['created', 'pending', 0]])
    }
  })

  withOutbox('int64 extremes and 2^53+1 are exact in the payload', ['created'], async (store, outbox) => {
    const ids = [INT64_MAX, INT64_MIN, 2n ** 53n + 1n]
    for (const id of ids) await store.create({ id, name: String(id) })
    const events = await allEvents(outbox)
    assert.deepEqual(events.map(idOf), ids)
    for (const [i, id] of ids.entries()) {
      assert.ok(events[i].payload.includes(`"id":${id},`), `${id} digit for digit`)
      assert.equal(events[i].payload, plantCreatedPayload({ id, name: String(id) }, events[i].createdAt))
    }
  })

  withOutbox('a delete that deleted a plant writes plant.deleted for the endpoints subscribed to it; one of nothing writes nothing',
    ['all', 'created', 'deleted'], async (store, outbox) => {
      await store.create({ id: 1n, name: 'fern' })
      const before = Date.now()
      assert.equal(await store.delete(1n), true)
      assert.equal(await store.delete(1n), false)
      assert.equal(await store.delete(2n), false)
      const events = await allEvents(outbox)
      assert.deepEqual(events.map(({ type }) => type), ['plant.created', 'plant.deleted'])
      const deleted = events[1]
      assert.ok(deleted.createdAt.getTime() >= before)
      assert.equal(deleted.payload, plantDeletedPayload(1n, deleted.createdAt))
      assert.deepEqual(deleted.deliveries.map(({ endpoint, state }) => [endpoint, state]), [['all', 'pending'], ['deleted', 'pending']])
    })

  withOutbox('with no endpoint subscribed to plant.deleted, a delete writes no event', ['created'], async (store, outbox) => {
    await store.create({ id: 1n, name: 'fern' })
    assert.equal(await store.delete(1n), true)
    assert.deepEqual((await allEvents(outbox)).map(({ type }) => type), ['plant.created'])
  })

  withOutbox('with no endpoint subscribed to plant.created, a create writes no event', ['deleted'], async (store, outbox) => {
    await store.create({ id: 1n, name: 'fern' })
    assert.deepEqual(await allEvents(outbox), [])
    assert.equal(await store.delete(1n), true)
    assert.deepEqual((await allEvents(outbox)).map(({ type }) => type), ['plant.deleted'])
  })

  withOutbox('claim hands out due, pending deliveries, oldest first, up to each endpoint\'s limit, under a new claim id per call',
    ['all', 'created'], async (store, outbox) => {
      for (let id = 1n; id <= 5n; id++) await store.create({ id, name: `plant ${id}` })
      const events = await allEvents(outbox)
      const seqs = events.map(({ seq }) => seq)
      const first = await outbox.claim([{ endpoint: 'all', limit: 2 }], LONG_LEASE_MS)
      assert.deepEqual(byKey(first), seqs.slice(0, 2).map((seq) => `all:${seq}`).sort(), 'the two oldest')
      const feedId = (await outbox.readFeed(undefined, 0)).id
      for (const delivery of first) {
        const event = events.find(({ seq }) => seq === delivery.seq)!
        same(delivery, { seq: event.seq, messageId: event.messageId, type: 'plant.created', endpoint: 'all', payload: event.payload, attempts: 0, claim: delivery.claim, feed: delivery.feed })
        assert.deepEqual([delivery.feed.id, delivery.feed.position.seq], [feedId, event.seq], 'its place in the change feed (its webhook-cursor)')
        assert.equal(typeof delivery.claim, 'string')
      }
      const second = await outbox.claim([{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 1 }], LONG_LEASE_MS)
      assert.deepEqual(byKey(second), [...seqs.slice(2).map((seq) => `all:${seq}`), `created:${seqs[0]}`].sort())
      assert.ok(second.every(({ claim }) => claim !== first[0].claim), 'another call, another claim id')
      const third = await outbox.claim([{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }], LONG_LEASE_MS)
      assert.deepEqual(byKey(third), seqs.slice(1).map((seq) => `created:${seq}`).sort(), 'only what no lease holds')
      assert.deepEqual(await outbox.claim([{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }], LONG_LEASE_MS), [])
      await store.create({ id: 6n, name: 'plant 6' })
      assert.deepEqual(await outbox.claim([{ endpoint: 'nope', limit: 10 }], LONG_LEASE_MS), [], 'nothing for an unknown endpoint')
    })

  withOutbox('a claim is leased: claimed again only once the lease ran out; a result under the stale claim is dropped',
    ['created'], async (store, outbox, _recorded, clock) => {
      await store.create({ id: 1n, name: 'fern' })
      const want = [{ endpoint: 'created', limit: 10 }]
      const [first] = await outbox.claim(want, 100)
      assert.deepEqual(await outbox.claim(want, 100), [], 'not while leased')
      await clock.advance(99)
      assert.deepEqual(await outbox.claim(want, 100), [], 'nor 1 ms before the lease ends')
      await clock.advance(1)
      const [second] = await outbox.claim(want, LONG_LEASE_MS)
      assert.equal(second.seq, first.seq, 'claimable again once the lease is over')
      assert.notEqual(second.claim, first.claim)
      assert.equal(second.attempts, 0)
      const before = await outbox.event(first.seq)
      const endpointsBefore = await outbox.endpoints()
      await outbox.record([attempt(first, { outcome: 'success', status: 200, next: { state: 'delivered' } })])
      same(await outbox.event(first.seq), before, 'the stale claim changed no delivery')
      same(await outbox.endpoints(), endpointsBefore, 'nor the endpoint')
      await outbox.release([first])
      assert.deepEqual(await outbox.claim(want, LONG_LEASE_MS), [], 'nor can it release the new claim')
      await outbox.record([attempt(second, { outcome: 'success', status: 200, next: { state: 'delivered' } })])
      assert.equal((await outbox.event(first.seq))!.deliveries[0].state, 'delivered', 'the current claim writes')
    }, { fakeTime: true })

  withOutbox('record under the current claim: retried later, delivered or failed, attempts counted, each in the history, once',
    ['all', 'created', 'deleted'], async (store, outbox) => {
      await store.create({ id: 1n, name: 'fern' })
      const claimed = await outbox.claim([{ endpoint: 'all', limit: 1 }, { endpoint: 'created', limit: 1 }], LONG_LEASE_MS)
      const all = claimed.find(({ endpoint }) => endpoint === 'all')!
      const created = claimed.find(({ endpoint }) => endpoint === 'created')!
      const retry = retryIn(60_000)
      const records = [
        attempt(all, { outcome: 'http_error', status: 500, durationMs: 30, next: retry }),
        attempt(created, { outcome: 'timeout', error: 'timeout', durationMs: 15000, next: { state: 'failed' } })
      ]
      await outbox.record(records)
      const view = (await outbox.event(all.seq))!
      same(view.deliveries, [
        { endpoint: 'all', state: 'pending', attempts: 1, dueAt: retry.dueAt, history: [{ at: records[0].at, outcome: 'http_error', status: 500, durationMs: 30 }] },
        { endpoint: 'created', state: 'failed', attempts: 1, history: [{ at: records[1].at, outcome: 'timeout', error: 'timeout', durationMs: 15000 }] }
      ])
      assert.deepEqual(await outbox.claim([{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }], LONG_LEASE_MS), [],
        'neither a delivery due later nor a failed one is claimed')
      await outbox.record(records)
      same(await outbox.event(all.seq), view, 'a result is recorded once: its claim is spent')
      await outbox.redeliver(all.seq, 'all', 1)
      const [again] = await outbox.claim([{ endpoint: 'all', limit: 10 }], LONG_LEASE_MS)
      assert.equal(again.attempts, 1)
      const delivered = attempt(again, { outcome: 'success', status: 204, next: { state: 'delivered' } })
      await outbox.record([delivered])
      const history = [{ at: records[0].at, outcome: 'http_error', status: 500, durationMs: 30 }, { at: delivered.at, outcome: 'success', status: 204, durationMs: 12 }]
      same((await outbox.event(all.seq))!.deliveries[0], { endpoint: 'all', state: 'delivered', attempts: 2, history }, 'attempts in the order made')
    })

  withOutbox('a success sets lastSuccessAt and clears failingSince; a failure sets failingSince once', ['created'], async (store, outbox) => {
    for (let id = 1n; id <= 3n; id++) await store.create({ id, name: `plant ${id}` })
    const [one, two, three] = await outbox.claim([{ endpoint: 'created', limit: 3 }], LONG_LEASE_MS)
    const failure = (delivery: ClaimedDelivery, at: Date) => attempt(delivery, { outcome: 'network', error: 'ECONNREFUSED', at, next: retryIn(60_000) })
    const t1 = new Date(Date.now() - 3000)
    await outbox.record([failure(one, t1)])
    same(await outbox.endpoints(), [{ name: 'created', enabled: true, failingSince: t1 }])
    await outbox.record([failure(two, new Date(Date.now() - 2000))])
    same(await outbox.endpoints(), [{ name: 'created', enabled: true, failingSince: t1 }], 'the first failure stays')
    const t3 = new Date(Date.now() - 1000)
    await outbox.record([attempt(three, { outcome: 'success', status: 200, at: t3, next: { state: 'delivered' } })])
    same(await outbox.endpoints(), [{ name: 'created', enabled: true, lastSuccessAt: t3 }])
  })

  withOutbox('results written together: a failure after the last success starts a streak, one before it does not', ['created'], async (store, outbox) => {
    for (let id = 1n; id <= 4n; id++) await store.create({ id, name: `plant ${id}` })
    const [one, two, three, four] = await outbox.claim([{ endpoint: 'created', limit: 4 }], LONG_LEASE_MS)
    const failure = (delivery: ClaimedDelivery, at: Date) => attempt(delivery, { outcome: 'http_error', status: 500, at, next: retryIn(60_000) })
    const success = (delivery: ClaimedDelivery, at: Date) => attempt(delivery, { outcome: 'success', status: 200, at, next: { state: 'delivered' } })
    const [t1, t2, t3, t4] = [4000, 3000, 2000, 1000].map((ago) => new Date(Date.now() - ago))
    await outbox.record([success(two, t2), failure(one, t1)])
    same(await outbox.endpoints(), [{ name: 'created', enabled: true, lastSuccessAt: t2 }], 'the failure came before the success')
    await outbox.record([failure(four, t4), success(three, t3)])
    same(await outbox.endpoints(), [{ name: 'created', enabled: true, lastSuccessAt: t3, failingSince: t4 }], 'the failure came after it')
  })

  withOutbox('release hands claimed deliveries back, due at once', ['created'], async (store, outbox) => {
    await store.create({ id: 1n, name: 'fern' })
    await store.create({ id: 2n, name: 'rose' })
    const want = [{ endpoint: 'created', limit: 10 }]
    const claimed = await outbox.claim(want, LONG_LEASE_MS)
    assert.equal(claimed.length, 2)
    await outbox.release(claimed)
    const again = await outbox.claim(want, LONG_LEASE_MS)
    assert.deepEqual(byKey(again), byKey(claimed))
    assert.ok(again.every(({ attempts }) => attempts === 0), 'a release is no attempt')
  })

  withOutbox('a disabled endpoint\'s deliveries are not claimed until it is enabled again; endpoints() shows its state',
    ['all', 'created'], async (store, outbox) => {
      same(await outbox.endpoints(), [{ name: 'all', enabled: true }, { name: 'created', enabled: true }], 'in configuration order, enabled')
      await store.create({ id: 1n, name: 'fern' })
      const [gone] = await outbox.claim([{ endpoint: 'all', limit: 1 }], LONG_LEASE_MS)
      await outbox.record([attempt(gone, { outcome: 'gone', status: 410, next: retryIn(0) })])
      const before = Date.now()
      assert.equal(await outbox.setEnabled('all', false, 'gone (410)'), true)
      const [all, created] = await outbox.endpoints()
      assert.equal(all.enabled, false)
      assert.ok(all.failingSince !== undefined, 'failing since the 410')
      assert.equal(all.disabledReason, 'gone (410)')
      assert.ok(all.disabledAt !== undefined && all.disabledAt.getTime() >= before && all.disabledAt.getTime() <= Date.now())
      same(created, { name: 'created', enabled: true })
      for (const state of [all, created]) {
        assert.ok(Object.keys(state).every((key) => ['name', 'enabled', 'disabledReason', 'disabledAt', 'lastSuccessAt', 'failingSince'].includes(key)),
          'no more than the state: the outbox never sees a secret')
      }
      const want = [{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }]
      assert.deepEqual((await outbox.claim(want, LONG_LEASE_MS)).map(({ endpoint }) => endpoint), ['created'])
      assert.equal(await outbox.setEnabled('nope', false, 'unknown'), false, 'an unknown endpoint')
      assert.equal(await outbox.setEnabled('created', false), true, 'disabled without a reason')
      const [, unexplained] = await outbox.endpoints()
      assert.ok(!unexplained.enabled && unexplained.disabledReason === undefined && unexplained.disabledAt !== undefined)
      await outbox.setEnabled('created', true)
      assert.equal(await outbox.setEnabled('all', true), true)
      same((await outbox.endpoints())[0], { name: 'all', enabled: true },
        'enabled again: no reason left, and a fresh start (no failingSince, which would disable it again at once)')
      assert.deepEqual((await outbox.claim(want, LONG_LEASE_MS)).map(({ endpoint }) => endpoint), ['all'], 'its deliveries are claimed again')
    })

  withOutbox('events pages in seq order after a keyset cursor', ['created'], async (store, outbox) => {
    for (const id of [5n, -3n, 9n, 1n, 2n, 8n, 0n]) await store.create({ id, name: `plant ${id}` })
    const pages: bigint[][] = []
    for (let after: bigint | undefined; ;) {
      const page = await outbox.events({ after, limit: 3 })
      if (page.length === 0) break
      pages.push(page.map(({ seq }) => seq))
      after = page.at(-1)!.seq
    }
    assert.deepEqual(pages.map((page) => page.length), [3, 3, 1])
    const seqs = pages.flat()
    assert.ok(seqs.every((seq, i) => i === 0 || seqs[i - 1] < seq), 'ascending')
    assert.deepEqual((await outbox.events({ limit: 10 })).map(idOf), [5n, -3n, 9n, 1n, 2n, 8n, 0n], 'in commit order')
    assert.deepEqual((await outbox.events({ after: seqs[2], limit: 2 })).map(({ seq }) => seq), seqs.slice(3, 5))
    assert.deepEqual(await outbox.events({ after: seqs[6], limit: 10 }), [])
  })

  withOutbox('redeliver makes deliveries pending, due now, with the given attempts and the same message id; resolves how many',
    ['all', 'created'], async (store, outbox) => {
      await store.create({ id: 1n, name: 'fern' })
      const want = [{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }]
      const claimed = await outbox.claim(want, LONG_LEASE_MS)
      await outbox.record(claimed.map((delivery) => attempt(delivery, { outcome: 'http_error', status: 500, next: { state: 'failed' } })))
      const { seq, messageId } = claimed[0]
      assert.deepEqual((await outbox.stats()).map(({ failed }) => failed), [1, 1], 'two dead letters')
      assert.equal(await outbox.redeliver(seq, 'all', 8), 1)
      const view = (await outbox.event(seq))!
      const all = view.deliveries[0]
      assert.equal(all.state, 'pending')
      assert.equal(all.attempts, 8)
      assert.ok(all.dueAt !== undefined && all.dueAt.getTime() <= Date.now(), 'due now')
      assert.equal(all.history.length, 1, 'its history kept')
      assert.equal(view.deliveries[1].state, 'failed', 'the other endpoint\'s untouched')
      const [again] = await outbox.claim(want, LONG_LEASE_MS)
      same(again, { ...claimed.find(({ endpoint }) => endpoint === 'all')!, attempts: 8, claim: again.claim }, 'the same message, 8 attempts made')
      assert.equal(again.messageId, messageId)
      assert.equal(await outbox.redeliver(seq, undefined, 3), 2, 'every endpoint\'s delivery')
      assert.deepEqual(byKey(await outbox.claim(want, LONG_LEASE_MS)), [`all:${seq}`, `created:${seq}`], 'both due, the claim taken back')
      assert.equal(await outbox.redeliver(seq + 1000n, undefined, 1), 0, 'an unknown event')
      assert.equal(await outbox.redeliver(seq, 'nope', 1), 0, 'an unknown endpoint')
    })

  withOutbox('stats: pending count, oldest pending age and dead letters per endpoint', ['all', 'created'], async (store, outbox, _recorded, clock) => {
    same(await outbox.stats(), [
      { endpoint: 'all', pending: 0, oldestPendingMs: 0, failed: 0 }, { endpoint: 'created', pending: 0, oldestPendingMs: 0, failed: 0 }])
    await store.create({ id: 1n, name: 'fern' })
    await clock.advance(150)
    await store.create({ id: 2n, name: 'rose' })
    const [all, created] = await outbox.stats()
    assert.deepEqual([all.endpoint, all.pending, all.failed, created.endpoint, created.pending], ['all', 2, 0, 'created', 2])
    assert.equal(all.oldestPendingMs, 150, 'the oldest is the first event, made 150 ms ago')
    assert.equal(created.oldestPendingMs, 150)
    const [first] = await outbox.claim([{ endpoint: 'all', limit: 1 }], LONG_LEASE_MS)
    const claimedStats = (await outbox.stats())[0]
    assert.equal(claimedStats.pending, 2, 'a claimed delivery is still pending')
    assert.equal(claimedStats.oldestPendingMs, 150, 'and still the oldest')
    await outbox.record([attempt(first, { outcome: 'gone', status: 410, next: { state: 'failed' } })])
    await clock.advance(50)
    const [after] = await outbox.stats()
    assert.deepEqual([after.pending, after.failed], [1, 1])
    assert.equal(after.oldestPendingMs, 50, 'now the second event, made 50 ms ago, is the oldest pending')
  }, { fakeTime: true })

  withOutbox('prune drops only events whose every delivery is finished, older than the cut; seqs are never reused',
    ['all', 'created'], async (store, outbox) => {
      for (let id = 1n; id <= 3n; id++) await store.create({ id, name: `plant ${id}` })
      const [s1, s2, s3] = (await allEvents(outbox)).map(({ seq }) => seq)
      const want = [{ endpoint: 'all', limit: 2 }, { endpoint: 'created', limit: 2 }]
      const claimed = await outbox.claim(want, LONG_LEASE_MS)
      const of = (seq: bigint, endpoint: string) => claimed.find((delivery) => delivery.seq === seq && delivery.endpoint === endpoint)!
      await outbox.record([
        attempt(of(s1, 'all'), { outcome: 'success', status: 200, next: { state: 'delivered' } }),
        attempt(of(s1, 'created'), { outcome: 'gone', status: 410, next: { state: 'failed' } }),
        attempt(of(s2, 'all'), { outcome: 'success', status: 200, next: { state: 'delivered' } }),
        attempt(of(s2, 'created'), { outcome: 'http_error', status: 500, next: retryIn(60_000) })
      ])
      assert.equal(await outbox.prune(new Date(Date.now() - 60_000)), 0, 'none older than a minute ago')
      assert.equal(await outbox.prune(new Date(Date.now() + 1000)), 1, 'the finished one')
      assert.deepEqual((await allEvents(outbox)).map(({ seq }) => seq), [s2, s3], 'a pending delivery keeps its event')
      await outbox.redeliver(s2, 'created', 1)
      const rest = await outbox.claim(want, LONG_LEASE_MS)
      await outbox.record(rest.map((delivery) => attempt(delivery, { outcome: 'success', status: 200, next: { state: 'delivered' } })))
      const createdAt = (await outbox.event(s2))!.createdAt
      assert.equal(await outbox.prune(createdAt), 0, 'only older than the cut')
      assert.equal(await outbox.prune(new Date(Date.now() + 1000)), 2)
      assert.deepEqual(await allEvents(outbox), [])
      await store.create({ id: 4n, name: 'after' })
      const [latest] = await allEvents(outbox)
      assert.ok(latest.seq > s3, 'a new event\'s seq is past every earlier one, pruned or not')
    })

  if (storage === undefined) return
  test('reopened, the store keeps events, deliveries, attempts and endpoint states', async () => {
    const reopen = await storage()
    const endpoints = endpointsNamed('all', 'created')
    let store = await reopen()
    let before: { events: EventView[], endpoints: unknown }
    try {
      const outbox = await store.openOutbox({ endpoints, payloads: recordingPayloads().payloads })
      await store.create({ id: 1n, name: 'fern' })
      await store.create({ id: INT64_MIN, name: 'min', tag: 'edge' })
      const [delivery] = await outbox.claim([{ endpoint: 'all', limit: 1 }], LONG_LEASE_MS)
      await outbox.record([attempt(delivery, { outcome: 'success', status: 200, next: { state: 'delivered' } })])
      await outbox.setEnabled('created', false, 'no success for 5 days')
      before = { events: await allEvents(outbox), endpoints: await outbox.endpoints() }
    } finally {
      await store.close()
    }
    store = await reopen()
    try {
      const outbox = await store.openOutbox({ endpoints, payloads: recordingPayloads().payloads })
      same(await allEvents(outbox), before.events, 'events, deliveries and attempts kept')
      same(await outbox.endpoints(), before.endpoints, 'endpoint states kept: a disabled endpoint stays disabled')
      await store.create({ id: 2n, name: 'rose' })
      const events = await allEvents(outbox)
      assert.ok(events[2].seq > events[1].seq, 'seq goes on increasing')
      const claimed = await outbox.claim([{ endpoint: 'all', limit: 10 }, { endpoint: 'created', limit: 10 }], LONG_LEASE_MS)
      assert.deepEqual(byKey(claimed), [`all:${events[1].seq}`, `all:${events[2].seq}`].sort(), 'what is pending and enabled')
    } finally {
      await store.close()
    }
  })
}
