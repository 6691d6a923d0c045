import assert from 'node:assert/strict'
import { INT64_MAX, INT64_MIN } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../http/errors.js'
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
  if (openWithOutage !== undefined) outageCase(test, openWithOutage)
}
