import assert from 'node:assert/strict'
import { INT64_MAX, INT64_MIN } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../http/errors.js'
import { revisionOf } from './revision.js'
import type { PlantStore } from './types.js'

/** A store that can be made unavailable (its database down, its file locked…) and back. */
export interface StoreOutage {
  store: PlantStore
  down (): void | Promise<void>
  up (): void | Promise<void>
}

export interface StoreContractOptions {
  /** Registers one named test: node:test's `test`, tap's `t.test`, vitest's `test`... */
  test: (name: string, run: () => Promise<void>) => unknown
  /** Opens a new, empty store; the contract closes it after each test. */
  open: () => Promise<PlantStore>
  /** Opens a new, empty store that the test can make unavailable: for a store that can be. */
  openWithOutage?: () => Promise<StoreOutage>
}

type WithStore = (name: string, run: (store: PlantStore) => Promise<void>) => void

const ids = async (store: PlantStore, after?: bigint, limit = 1000) =>
  (await store.list({ after, limit })).map(({ id }) => id)

function createCases (withStore: WithStore) {
  withStore('create resolves the Plant without its id, with a tag only when one is given', async (store) => {
    assert.deepEqual(await store.create({ id: 1n, name: 'fern' }), { name: 'fern' })
    assert.deepEqual(await store.create({ id: 2n, name: 'rose', tag: 'flower' }), { name: 'rose', tag: 'flower' })
    assert.deepEqual(await store.create({ id: 3n, name: '', tag: '' }), { name: '', tag: '' }, 'empty text is kept')
    assert.deepEqual(Object.keys((await store.get(1n))!), ['name'], 'no tag key when read back')
    assert.deepEqual(await store.get(2n), { name: 'rose', tag: 'flower' })
    assert.deepEqual(await store.get(3n), { name: '', tag: '' }, 'an empty tag is not an absent one')
  })

  withStore('get of a missing id resolves undefined', async (store) => {
    await store.create({ id: 1n, name: 'fern' })
    assert.equal(await store.get(2n), undefined)
    assert.equal(await store.get(-1n), undefined)
  })

  withStore('a duplicate create rejects with PlantExistsError (409) and keeps the first plant', async (store) => {
    await store.create({ id: 7n, name: 'first' })
    await assert.rejects(store.create({ id: 7n, name: 'second', tag: 'late' }), PlantExistsError)
    assert.deepEqual(await store.get(7n), { name: 'first' })
  })

  withStore('50 concurrent creates of one id: exactly one wins, the rest get PlantExistsError', async (store) => {
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, index) => store.create({ id: 42n, name: `racer ${index}` })))
    const winners = results.flatMap((result, index) => result.status === 'fulfilled' ? [index] : [])
    assert.equal(winners.length, 1, 'one create fulfilled')
    const losers = results.flatMap((result) => result.status === 'rejected' ? [result.reason] : [])
    assert.ok(losers.every((reason) => reason instanceof PlantExistsError), 'all others PlantExistsError')
    assert.deepEqual(await store.get(42n), { name: `racer ${winners[0]}` }, 'the winner is stored')
  })

  withStore('int64 extremes round-trip exactly through get and list', async (store) => {
    const extremes = [INT64_MAX, 2n ** 53n + 1n, INT64_MIN, -(2n ** 53n) - 1n]
    for (const id of extremes) await store.create({ id, name: String(id) })
    for (const id of extremes) assert.deepEqual(await store.get(id), { name: String(id) }, `get ${id}`)
    const listed = await store.list({ limit: 10 })
    assert.deepEqual(listed.map(({ id }) => id), [INT64_MIN, -(2n ** 53n) - 1n, 2n ** 53n + 1n, INT64_MAX])
    assert.ok(listed.every(({ id, name }) => typeof id === 'bigint' && name === String(id)), 'ids are exact BigInts')
  })
}

function listAndDeleteCases (withStore: WithStore) {
  withStore('list orders ids numerically, respects limit and uses after as an exclusive cursor', async (store) => {
    for (const id of [10n, -5n, 2n]) await store.create({ id, name: `plant ${id}` })
    assert.deepEqual(await store.list({ limit: 100 }), [
      { id: -5n, name: 'plant -5' }, { id: 2n, name: 'plant 2' }, { id: 10n, name: 'plant 10' }
    ])
    assert.deepEqual(await ids(store, undefined, 2), [-5n, 2n], 'limit')
    assert.deepEqual(await ids(store, -5n), [2n, 10n], 'after an existing id excludes it')
    assert.deepEqual(await ids(store, 3n), [10n], 'after an id between two')
    assert.deepEqual(await ids(store, -5n, 1), [2n], 'after and limit together')
    assert.deepEqual(await ids(store, 10n), [], 'after the last id')
    assert.deepEqual(await ids(store, INT64_MIN), [-5n, 2n, 10n], 'after the smallest int64')
  })

  withStore('paging through 25 plants with limit 10 gives each plant exactly once', async (store) => {
    const created = Array.from({ length: 25 }, (_, index) => BigInt((index * 7919) % 25 - 12) * 1000003n)
    for (const id of created) await store.create({ id, name: `plant ${id}` })
    const pages: bigint[][] = []
    let after: bigint | undefined
    for (;;) {
      const page = await ids(store, after, 10)
      if (page.length === 0) break
      pages.push(page)
      after = page.at(-1)
    }
    assert.deepEqual(pages.map((page) => page.length), [10, 10, 5])
    assert.deepEqual(pages.flat(), created.toSorted((a, b) => (a < b ? -1 : 1)))
  })

  withStore('delete resolves true, then false, and the id can be created again', async (store) => {
    await store.create({ id: 5n, name: 'old', tag: 'gone' })
    assert.equal(await store.delete(5n), true)
    assert.equal(await store.get(5n), undefined)
    assert.equal(await store.delete(5n), false)
    assert.equal(await store.delete(6n), false, 'an id that never existed')
    assert.deepEqual(await store.create({ id: 5n, name: 'new' }), { name: 'new' })
    assert.deepEqual(await ids(store), [5n])
  })

  withStore('ping resolves', async (store) => {
    await store.ping()
  })
}

type Revising = PlantStore & Required<Pick<PlantStore, 'update' | 'listTagged'>>

/** The cases of a store with update and listTagged (the memory, SQLite and PostgreSQL stores); a store without them skips them. */
const withRevisions = (withStore: WithStore): WithStore => (name, run) => withStore(name, async (store) => {
  if (typeof store.update === 'function' && typeof store.listTagged === 'function') await run(store)
})

function updateCases (withStore: WithStore) {
  withStore('update replaces the name and tag, with a new revision that get then gives', async (raw) => {
    const store = raw as Revising
    const created = await store.create({ id: 1n, name: 'fern', tag: 'green' })
    const first = revisionOf(created)
    assert.match(String(first), /^[0-9]+$/, 'create gives a revision')
    assert.equal(revisionOf((await store.get(1n))!), first, 'get gives the same')
    const updated = await store.update(1n, { name: 'big fern' })
    assert.deepEqual(updated, { name: 'big fern' }, 'the tag is gone: the plant is replaced, not merged')
    const second = revisionOf(updated as object as { name: string })
    assert.notEqual(second, undefined, 'a revision')
    assert.notEqual(second, first, 'a new one')
    const read = (await store.get(1n))!
    assert.deepEqual(Object.keys(read), ['name'])
    assert.equal(revisionOf(read), second)
    assert.deepEqual(await store.update(1n, { name: '', tag: '' }), { name: '', tag: '' }, 'empty text is kept')
  })

  withStore('update of a missing id resolves not-found and stores nothing', async (raw) => {
    const store = raw as Revising
    assert.equal(await store.update(2n, { name: 'ghost' }), 'not-found')
    assert.equal(await store.update(2n, { name: 'ghost' }, { ifRevision: ['1'] }), 'not-found', 'with a precondition too')
    assert.equal(await store.get(2n), undefined)
    assert.deepEqual(await ids(store), [])
  })

  withStore('a precondition: only the revisions it names are written over; otherwise nothing changes', async (raw) => {
    const store = raw as Revising
    const first = revisionOf(await store.create({ id: 3n, name: 'a', tag: 't' }))!
    const second = revisionOf(await store.update(3n, { name: 'b' }, { ifRevision: [first] }) as { name: string })!
    assert.equal(await store.update(3n, { name: 'stale' }, { ifRevision: [first] }), 'precondition-failed')
    assert.equal(await store.update(3n, { name: 'none' }, { ifRevision: [] }), 'precondition-failed', 'an empty list matches nothing')
    assert.equal(await store.update(3n, { name: 'text' }, { ifRevision: ['x"y'] }), 'precondition-failed', 'a revision that is not one')
    assert.deepEqual(await store.get(3n), { name: 'b' }, 'unchanged')
    assert.deepEqual(await store.update(3n, { name: 'c' }, { ifRevision: [first, second] }), { name: 'c' }, 'any of a list')
    assert.equal(await store.delete(3n, { ifRevision: [second] }), 'precondition-failed', 'a delete too')
    assert.deepEqual(await store.get(3n), { name: 'c' }, 'not deleted')
    assert.equal(await store.delete(3n, { ifRevision: [revisionOf((await store.get(3n))!)!] }), true)
    assert.equal(await store.delete(3n, { ifRevision: ['1'] }), false, 'a missing plant is not a failed precondition')
  })

  withStore('20 concurrent updates holding one revision: exactly one is written', async (raw) => {
    const store = raw as Revising
    const revision = revisionOf(await store.create({ id: 4n, name: 'start' }))!
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => store.update(4n, { name: `racer ${index}` }, { ifRevision: [revision] })))
    const winners = results.flatMap((result, index) => typeof result === 'object' ? [index] : [])
    assert.equal(winners.length, 1, 'one update written')
    assert.ok(results.every((result) => typeof result === 'object' || result === 'precondition-failed'), 'the others precondition-failed')
    assert.deepEqual(await store.get(4n), { name: `racer ${winners[0]}` })
  })

  withStore('a plant deleted and created again has a revision its predecessor never had', async (raw) => {
    const store = raw as Revising
    const seen = new Set<string>()
    for (let round = 0; round < 5; round++) {
      const created = revisionOf(await store.create({ id: 5n, name: `round ${round}` }))!
      const updated = revisionOf(await store.update(5n, { name: 'x' }) as { name: string })!
      assert.ok(!seen.has(created) && !seen.has(updated), 'new revisions')
      seen.add(created).add(updated)
      await store.delete(5n)
    }
  })
}

function tagCases (withStore: WithStore) {
  withStore('listTagged: only that exact tag, in id order, with after and limit; updates and deletes move plants out', async (raw) => {
    const store = raw as Revising
    for (const [id, tag] of [[9n, 'a'], [-3n, 'a'], [4n, 'b'], [2n, undefined], [7n, ''], [1n, 'a'], [8n, 'A']] as const) {
      await store.create({ id, name: `p${id}`, ...(tag !== undefined && { tag }) })
    }
    const tagged = async (tag: string, after?: bigint, limit = 100) => (await store.listTagged(tag, { after, limit })).map(({ id }) => id)
    assert.deepEqual(await store.listTagged('a', { limit: 100 }), [
      { id: -3n, name: 'p-3', tag: 'a' }, { id: 1n, name: 'p1', tag: 'a' }, { id: 9n, name: 'p9', tag: 'a' }])
    assert.deepEqual(await tagged('a', undefined, 2), [-3n, 1n], 'limit')
    assert.deepEqual(await tagged('a', 1n), [9n], 'after')
    assert.deepEqual(await tagged('a', 0n, 1), [1n], 'after and limit')
    assert.deepEqual(await tagged(''), [7n], 'the empty tag is a tag, no tag is not')
    assert.deepEqual(await tagged('nothing'), [])
    await store.update(1n, { name: 'moved', tag: 'b' })
    await store.delete(9n)
    await store.update(2n, { name: 'tagged now', tag: 'a' })
    assert.deepEqual(await tagged('a'), [-3n, 2n])
    assert.deepEqual(await tagged('b'), [1n, 4n])
  })
  withStore('listTagged: the first list by tag sees the creates, updates and deletes that came before it', async (raw) => {
    const store = raw as Revising
    for (const id of [5n, 3n, 8n, 1n]) await store.create({ id, name: `p${id}`, tag: 'a' })
    await store.update(3n, { name: 'moved', tag: 'b' })
    await store.update(8n, { name: 'untagged' })
    await store.delete(1n)
    await store.create({ id: 1n, name: 'again', tag: 'b' })
    const tagged = async (tag: string) => (await store.listTagged(tag, { limit: 100 })).map(({ id }) => id)
    assert.deepEqual(await tagged('b'), [1n, 3n])
    assert.deepEqual(await tagged('a'), [5n])
  })
}

function outageCase (test: StoreContractOptions['test'], openWithOutage: NonNullable<StoreContractOptions['openWithOutage']>) {
  test('while unavailable: creates of one id all reject StoreUnavailableError (503), none PlantExistsError; other operations answer or reject StoreUnavailableError', async () => {
    const { store, down, up } = await openWithOutage()
    try {
      await store.create({ id: 1n, name: 'before' })
      await down()
      // Creates arriving together: a repeat of an id must wait for the store's verdict on the first.
      const creates = await Promise.allSettled([
        ...Array.from({ length: 10 }, (_, index) => store.create({ id: 42n, name: `racer ${index}` })),
        store.create({ id: 1n, name: 'taken' }),
        store.create({ id: 43n, name: 'other' })
      ])
      for (const result of creates) {
        assert.ok(result.status === 'rejected' && result.reason instanceof StoreUnavailableError,
          'every create rejects StoreUnavailableError: a 409 would say the id is stored, which no one could tell')
      }
      // Reads may still work while writes cannot (an SQLite file another writer holds): each other
      // operation answers or says the store is unavailable, never fails another way (a 500).
      const failures = new Set<string>()
      for (const [name, run] of [['get', () => store.get(1n)], ['list', () => store.list({ limit: 10 })],
        ['delete', () => store.delete(99n)], ['ping', () => store.ping()]] as const) {
        const [result] = await Promise.allSettled([(run as () => Promise<unknown>)()])
        if (result.status === 'fulfilled') continue
        assert.ok(result.reason instanceof StoreUnavailableError, `${name} answers or rejects StoreUnavailableError`)
        failures.add(name)
      }
      // /readyz answers with ping: it must not say ready while reads fail.
      if (failures.has('get') || failures.has('list')) assert.ok(failures.has('ping'), 'ping rejects while reads do')
      await up()
      assert.deepEqual(await store.create({ id: 42n, name: 'after' }), { name: 'after' }, 'the id was never stored')
      assert.deepEqual(await ids(store), [1n, 42n], 'nothing of the failed creates was stored')
    } finally {
      await up()
      await store.close()
    }
  })
}

/**
 * The behaviour the routes rely on, as tests, for any PlantStore: the memory, SQLite and
 * PostgreSQL stores pass it, and a host runs it on a store of its own. Assertions are
 * node:assert's, so any test runner reports them.
 */
export function storeContract ({ test, open, openWithOutage }: StoreContractOptions): void {
  const withStore = (name: string, run: (store: PlantStore) => Promise<void>) => test(name, async () => {
    const store = await open()
    try {
      await run(store)
    } finally {
      await store.close()
    }
  })
  createCases(withStore)
  listAndDeleteCases(withStore)
  updateCases(withRevisions(withStore))
  tagCases(withRevisions(withStore))
  if (openWithOutage !== undefined) outageCase(test, openWithOutage)
}
