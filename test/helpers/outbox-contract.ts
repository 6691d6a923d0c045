import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { OutboxEventType, OutboxOptions, OutboxStore, WebhookOutbox } from '../../stores/outbox.js'
import type { PlantStore } from '../../stores/types.js'
import { plantCreatedPayload, plantDeletedPayload } from '../../webhooks/payload.js'
import { messageId } from '../../webhooks/signing.js'

type Store = PlantStore & OutboxStore

const ENDPOINTS = [
  { name: 'both', events: ['plant.created', 'plant.deleted'] as OutboxEventType[] },
  { name: 'created', events: ['plant.created'] as OutboxEventType[] },
  { name: 'deleted', events: ['plant.deleted'] as OutboxEventType[] }
]

/**
 * The outbox's behaviour, through the WebhookOutbox interface only, for any store that keeps one:
 * the memory, SQLite and PostgreSQL stores each run it.
 */
export function outboxContract (test: (name: string, run: () => Promise<void>) => unknown, open: () => Promise<Store>) {
  const withOutbox = (name: string, run: (store: Store, outbox: WebhookOutbox, committed: Array<[OutboxEventType, number]>) => Promise<void>,
    endpoints = ENDPOINTS) =>
    test(name, async () => {
      const store = await open()
      const committed: Array<[OutboxEventType, number]> = []
      const options: OutboxOptions = {
        endpoints,
        payloads: { created: plantCreatedPayload, deleted: plantDeletedPayload, messageId },
        committed: (type, count) => committed.push([type, count])
      }
      try {
        await run(store, await store.openOutbox(options), committed)
      } finally {
        await store.close()
      }
    })
  const claimAll = (outbox: WebhookOutbox, leaseMs = 60_000, limit = 100) =>
    outbox.claim(ENDPOINTS.map(({ name }) => ({ endpoint: name, limit })), leaseMs)

  withOutbox('each stored plant has one event, with a delivery per subscribed endpoint; a 409 has none', async (store, outbox, committed) => {
    const ids = [2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n]
    const results = await Promise.allSettled([...ids, ids[0]].map((id) => store.create({ id, name: `p${id}`, tag: 't' })))
    assert.deepEqual(results.map(({ status }) => status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
    await assert.rejects(store.create({ id: ids[1], name: 'again' }))
    const events = await outbox.events({ limit: 10 })
    assert.equal(events.length, 3, 'three events')
    assert.deepEqual(events.map(({ type }) => type), ['plant.created', 'plant.created', 'plant.created'])
    assert.deepEqual(events.map(({ payload }) => /"id":(-?\d+)/.exec(payload)![1]).sort(), ids.map(String).sort(), 'ids exact')
    assert.equal(new Set(events.map(({ messageId }) => messageId)).size, 3)
    for (const event of events) {
      assert.deepEqual(event.deliveries.map(({ endpoint, state, attempts, history }) => [endpoint, state, attempts, history.length]),
        [['both', 'pending', 0, 0], ['created', 'pending', 0, 0]])
      assert.ok(event.createdAt instanceof Date)
    }
    assert.deepEqual(committed.reduce((sum, [, count]) => sum + count, 0), 3, 'committed told of three events')
  })

  withOutbox('a delete that deleted a plant writes plant.deleted for its subscribers; a delete of nothing, nothing', async (store, outbox, committed) => {
    await store.create({ id: 1n, name: 'a' })
    assert.equal(await store.delete(1n), true)
    assert.equal(await store.delete(1n), false)
    const events = await outbox.events({ limit: 10 })
    assert.deepEqual(events.map(({ type }) => type), ['plant.created', 'plant.deleted'])
    assert.match(events[1].payload, /^\{"type":"plant\.deleted","timestamp":"[^"]+","id":1\}$/)
    assert.deepEqual(events[1].deliveries.map(({ endpoint }) => endpoint), ['both', 'deleted'])
    assert.deepEqual(committed, [['plant.created', 1], ['plant.deleted', 1]])
  })

  withOutbox('claims: due deliveries of enabled endpoints, per-endpoint limits, leased; a stale claim writes nothing', async (store, outbox) => {
    for (let id = 1n; id <= 3n; id++) await store.create({ id, name: 'a' })
    const first = await outbox.claim([{ endpoint: 'both', limit: 2 }], 150)
    assert.equal(first.length, 2, 'the limit')
    assert.ok(first.every(({ endpoint, attempts, type }) => endpoint === 'both' && attempts === 0 && type === 'plant.created'))
    assert.deepEqual((await outbox.claim([{ endpoint: 'both', limit: 5 }], 150)).length, 1, 'the claimed ones are leased')
    assert.equal(await outbox.setEnabled('created', false, 'because'), true)
    assert.equal(await outbox.setEnabled('nope', false), false)
    assert.deepEqual(await outbox.claim([{ endpoint: 'created', limit: 5 }], 150), [], 'a disabled endpoint gets nothing')
    await sleep(250)
    const again = await outbox.claim([{ endpoint: 'both', limit: 5 }], 60_000)
    assert.equal(again.length, 3, 'leases run out: claimable again')
    const stale = first[0]
    const at = new Date()
    await outbox.record([{ ...stale, outcome: 'success', status: 200, at, durationMs: 3, next: { state: 'delivered' } }])
    const [event] = await outbox.events({ limit: 1 })
    assert.equal(event.deliveries[0].state, 'pending', 'the stale claim wrote nothing')
    const current = again.find(({ seq }) => seq === stale.seq)!
    assert.notEqual(current.claim, stale.claim)
    await outbox.record([{ ...current, outcome: 'success', status: 200, at, durationMs: 3, next: { state: 'delivered' } }])
    assert.deepEqual((await outbox.event(stale.seq))!.deliveries[0], {
      endpoint: 'both', state: 'delivered', attempts: 1, history: [{ at, outcome: 'success', status: 200, durationMs: 3 }]
    })
    assert.equal(await outbox.event(999n), undefined)
  })

  withOutbox('results: retried later, failed for good, endpoint streaks; release; redeliver; enabling again', async (store, outbox) => {
    await store.create({ id: 1n, name: 'a' })
    const [delivery] = await outbox.claim([{ endpoint: 'both', limit: 1 }], 60_000)
    const at = new Date(Date.now() - 1000)
    const later = new Date(Date.now() + 3_600_000)
    await outbox.record([{ ...delivery, outcome: 'http_error', status: 500, at, durationMs: 1, next: { state: 'pending', dueAt: later } }])
    let [state] = await outbox.endpoints()
    assert.deepEqual([state.name, state.enabled, state.failingSince, state.lastSuccessAt], ['both', true, at, undefined])
    assert.deepEqual(await outbox.claim([{ endpoint: 'both', limit: 1 }], 60_000), [], 'not due before its time')
    const view = (await outbox.event(delivery.seq))!.deliveries[0]
    assert.deepEqual([view.state, view.attempts, view.dueAt, view.history[0].error], ['pending', 1, later, undefined])
    assert.equal(await outbox.redeliver(delivery.seq, 'both', 5), 1)
    const [again] = await outbox.claim([{ endpoint: 'both', limit: 1 }], 60_000)
    assert.equal(again.attempts, 5, 'redelivered with the attempts given')
    assert.equal(again.messageId, delivery.messageId, 'the same message id')
    await outbox.record([{ ...again, outcome: 'network', error: 'ECONNREFUSED', at: new Date(), durationMs: 2, next: { state: 'failed' } }])
    const failed = (await outbox.event(delivery.seq))!.deliveries[0]
    assert.deepEqual([failed.state, failed.attempts, failed.dueAt, failed.history[1].error], ['failed', 6, undefined, 'ECONNREFUSED'])
    ;[state] = await outbox.endpoints()
    assert.deepEqual(state.failingSince, at, 'failing since the first failure')
    const stats = await outbox.stats()
    assert.deepEqual(stats.find(({ endpoint }) => endpoint === 'both'), { endpoint: 'both', pending: 0, failed: 1, oldestPendingMs: 0 })
    const created = stats.find(({ endpoint }) => endpoint === 'created')!
    assert.equal(created.pending, 1)
    assert.ok(created.oldestPendingMs >= 0 && created.oldestPendingMs < 60_000)
    assert.equal(await outbox.redeliver(delivery.seq, undefined, 0), 2, 'to every endpoint it went to')
    const claims = await claimAll(outbox)
    assert.equal(claims.length, 2)
    await outbox.release(claims)
    const reclaimed = await claimAll(outbox)
    assert.equal(reclaimed.length, 2, 'released: due at once')
    await outbox.release(reclaimed)
    const success = new Date()
    const [one] = await outbox.claim([{ endpoint: 'both', limit: 1 }], 1)
    await sleep(5)
    const [taken] = await outbox.claim([{ endpoint: 'both', limit: 1 }], 60_000)
    await outbox.record([{ ...taken, outcome: 'success', status: 204, at: success, durationMs: 1, next: { state: 'delivered' } }])
    await outbox.release([one])
    ;[state] = await outbox.endpoints()
    assert.deepEqual([state.failingSince, state.lastSuccessAt], [undefined, success], 'a success ends the streak')
    assert.equal((await outbox.event(delivery.seq))!.deliveries[0].state, 'delivered', 'a stale release changes nothing')
    await outbox.setEnabled('both', false, '410')
    ;[state] = await outbox.endpoints()
    assert.deepEqual([state.enabled, state.disabledReason, state.disabledAt instanceof Date], [false, '410', true])
    await outbox.setEnabled('both', true)
    ;[state] = await outbox.endpoints()
    assert.deepEqual([state.enabled, state.disabledReason, state.disabledAt], [true, undefined, undefined])
    assert.equal(await outbox.redeliver(999n, undefined, 0), 0)
  })

  withOutbox('events page by seq; prune removes old finished events only, never a pending one', async (store, outbox) => {
    for (let id = 1n; id <= 5n; id++) await store.create({ id, name: 'a' })
    const all = await outbox.events({ limit: 10 })
    const page = await outbox.events({ after: all[1].seq, limit: 2 })
    assert.deepEqual(page.map(({ seq }) => seq), [all[2].seq, all[3].seq])
    // The first two finished everywhere, the third only for one endpoint.
    const claims = await claimAll(outbox)
    const done = claims.filter(({ seq, endpoint }) => seq === all[0].seq || seq === all[1].seq || (seq === all[2].seq && endpoint === 'both'))
    await outbox.record(done.map((claim) => ({ ...claim, outcome: 'success', at: new Date(), durationMs: 1, next: { state: 'delivered' as const } })))
    assert.equal(await outbox.prune(new Date(Date.now() - 60_000)), 0, 'none old enough')
    assert.equal(await outbox.prune(new Date(Date.now() + 60_000)), 2, 'the two finished ones')
    assert.deepEqual((await outbox.events({ limit: 10 })).map(({ seq }) => seq), all.slice(2).map(({ seq }) => seq), 'pending ones kept')
  })

  withOutbox('endpoints that take only plant.deleted: a create writes no event, a delete one', async (store, outbox, committed) => {
    await store.create({ id: 1n, name: 'a' })
    assert.deepEqual(await outbox.events({ limit: 10 }), [])
    await store.delete(1n)
    assert.deepEqual((await outbox.events({ limit: 10 })).map(({ type }) => type), ['plant.deleted'])
    assert.deepEqual(committed, [['plant.deleted', 1]])
  }, [ENDPOINTS[2]])

  withOutbox('endpoints that take only plant.created: a delete writes no event', async (store, outbox) => {
    await store.create({ id: 1n, name: 'a' })
    await store.delete(1n)
    assert.deepEqual((await outbox.events({ limit: 10 })).map(({ type }) => type), ['plant.created'])
  }, [ENDPOINTS[1]])
}
