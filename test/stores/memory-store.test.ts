import { performance } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { SortedIds } from '../../plugins/store/memory/sorted-ids.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { median } from '../helpers/time.js'

const FILLED = 400_000
const ROUNDS = 7
const PER_ROUND = 3_000

/** Creates per second of `PER_ROUND` new ids from `first`, each `step` from the one before. */
async function createsPerSecond (store: PlantStore, first: bigint, step: bigint): Promise<number> {
  const start = performance.now()
  for (let id = first, count = 0; count < PER_ROUND; id += step, count++) await store.create({ id, name: 'p' })
  return PER_ROUND / ((performance.now() - start) / 1000)
}

t.test('inserts cost about the same whatever the id order: O(log n), not O(n)', async (t) => {
  const store = createMemoryStore()
  t.teardown(() => store.close())
  for (let id = 0n; id < BigInt(FILLED); id++) await store.create({ id, name: 'p' })
  // Rounds that alternate below the smallest id (the front of a sorted array) and above the
  // largest (its end), so that warm-up and garbage collection weigh on both alike.
  const rates: Record<'ascending' | 'descending', number[]> = { ascending: [], descending: [] }
  for (let round = 0n; round < BigInt(ROUNDS); round++) {
    const offset = round * BigInt(PER_ROUND)
    rates.descending.push(await createsPerSecond(store, -1n - offset, -1n))
    rates.ascending.push(await createsPerSecond(store, BigInt(FILLED) + offset, 1n))
  }
  const ascending = median(rates.ascending)
  const descending = median(rates.descending)
  t.comment(`at ${FILLED} plants, medians of ${ROUNDS} rounds: ${Math.round(ascending)} creates/s ascending, ` +
    `${Math.round(descending)} descending ` +
    `(ratio ${(descending / ascending).toFixed(2)})`)
  // A sorted array moves every id on an insert at the front: a tenth of the ascending rate or less
  // (1.3k against 12k creates/s). A search in O(log n) keeps it within a few times the rate of an
  // append at the end, which needs none.
  t.ok(descending / ascending > 0.2, 'descending ids are created at least 0.2 times as fast as ascending ones')
})

t.test('the order kept through inserts and deletes in any order is the ascending one', async (t) => {
  const store = createMemoryStore()
  t.teardown(() => store.close())
  // A fixed pseudo-random permutation of 0..999, shifted to cover negative ids too.
  const ids = Array.from({ length: 1000 }, (_, index) => BigInt((index * 7919) % 1000) - 500n)
  for (const id of ids) await store.create({ id, name: String(id) })
  for (const id of ids.filter((id) => id % 3n === 0n)) t.equal(await store.delete(id), true)
  t.equal(await store.delete(3n), false, 'a deleted id is gone')
  const kept = ids.filter((id) => id % 3n !== 0n).sort((a, b) => (a < b ? -1 : 1))
  const listed: bigint[] = []
  for (let after: bigint | undefined; ;) {
    const page = await store.list({ after, limit: 97 })
    if (page.length === 0) break
    listed.push(...page.map(({ id }) => id))
    after = page.at(-1)!.id
  }
  t.strictSame(listed, kept, 'paging lists exactly the ids kept, ascending')
  t.strictSame((await store.list({ after: 0n, limit: 2 })).map(({ id }) => id), [1n, 2n], 'a page after an id not stored')
})

t.test('the sorted set ignores the deletion of an id it does not hold', async (t) => {
  const ids = new SortedIds()
  ids.delete(1n)
  ids.add(2n)
  ids.delete(1n)
  ids.delete(3n)
  t.strictSame(ids.page(undefined, 10), [2n])
})

t.test('ids that grow are appended, also after the largest ids are deleted or the set is cleared', async (t) => {
  const ids = new SortedIds()
  const kept: bigint[] = []
  // Grow, drop the largest (and sometimes the one below), grow again: each step moves the end.
  for (let id = 1n; id <= 2000n; id++) {
    ids.add(id)
    kept.push(id)
    if (id % 5n === 0n) {
      ids.delete(id)
      kept.pop()
      if (id % 10n === 0n) {
        ids.delete(id - 1n)
        kept.pop()
      }
    }
  }
  ids.add(0n) // below them all: found by a search
  kept.unshift(0n)
  t.strictSame(ids.page(undefined, 5000), kept, 'every id, ascending')
  t.strictSame(ids.page(1995n, 10), [1996n, 1997n, 1998n], 'the end is where the last add and deletes left it')
  for (const id of kept) ids.delete(id)
  t.strictSame(ids.page(undefined, 10), [], 'emptied')
  ids.add(7n)
  ids.add(8n)
  t.strictSame(ids.page(undefined, 10), [7n, 8n], 'an emptied set grows again')
  ids.clear()
  ids.add(9n)
  ids.add(10n)
  t.strictSame(ids.page(undefined, 10), [9n, 10n], 'a cleared set grows again')
})

t.test('the sorted set keeps an id in about 120 bytes of heap: its links are sized once, not grown', async (t) => {
  // The heap measured after full collections (gc exposed for this test only), with the ids kept alive.
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const count = 200_000
  gc()
  const before = process.memoryUsage().heapUsed
  const ids = new SortedIds()
  for (let id = 1n; id <= BigInt(count); id++) ids.add(id)
  gc()
  const perId = (process.memoryUsage().heapUsed - before) / count
  t.strictSame(ids.page(BigInt(count - 2), 5), [BigInt(count - 1), BigInt(count)], 'every id is held')
  // Links grown from [] reserved 17 slots each: about 250 bytes an id.
  t.ok(perId < 170, `${perId.toFixed(0)} bytes an id`)
})
