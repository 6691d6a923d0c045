import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { MAX_PAGE_BYTES, type NewPlant } from '../../schemas/index.js'
import { AUTH, build, type App } from '../helpers/app.js'
import { listedIds } from '../helpers/load.js'

const BODY_LIMIT = 1024 * 1024

/** GET /plants with this query: the status, the body's bytes and the ids listed, read without JSON.parse. */
async function page (app: App, query: string) {
  const response = await app.inject({ url: `/plants?${query}`, headers: AUTH })
  return {
    status: response.statusCode,
    bytes: response.rawPayload.length,
    ids: response.statusCode === 200 ? listedIds(response.body) : [],
    body: response.body
  }
}

/** A memory store whose listed plants tell which of their names were read (`read`, by id). */
function watchedStore () {
  const store = createMemoryStore()
  const read = new Set<bigint>()
  const list: PlantStore['list'] = async (options) => (await store.list(options)).map(({ id, name, ...rest }) => ({
    id, ...rest, get name () { read.add(id); return name }
  }))
  return { store: { ...store, list }, read }
}

/** Pages through every plant with `after`, checking each page's size: the ids in the order listed. */
async function walk (t: Test, app: App, limit: number) {
  const seen: string[] = []
  for (let after: string | undefined; ;) {
    const { status, bytes, ids } = await page(app, `limit=${limit}${after === undefined ? '' : `&after=${after}`}`)
    t.equal(status, 200)
    if (bytes > MAX_PAGE_BYTES) t.fail(`a page of ${bytes} bytes`)
    if (ids.length === 0) return seen
    seen.push(...ids)
    after = ids.at(-1)
  }
}

t.test('600 plants with names near BODY_LIMIT: each page is bounded in bytes, quick, and its cursor goes on', async (t) => {
  const watched = watchedStore()
  const { app } = await build(t, { store: watched.store })
  const { store } = watched
  // Plants stored before names had a maximum (or with MAX_TEXT_LENGTH raised): one string for all
  // names keeps the test's own memory small; the reply would still be 600 MiB.
  const name = 'x'.repeat(BODY_LIMIT - 64)
  for (let id = 1n; id <= 600n; id++) await store.create({ id, name })

  const first = await page(app, 'limit=1000')
  t.equal(first.status, 200, 'no RangeError from the serializer')
  t.ok(first.bytes <= MAX_PAGE_BYTES, `the page holds ${first.bytes} bytes, at most ${MAX_PAGE_BYTES}`)
  t.same(first.ids, ['1'], 'it ends early: one plant of ~1 MiB')
  // Quick: the page is measured up to the plant that does not fit, and no further (600 MiB listed).
  t.strictSame([...watched.read], [1n, 2n], 'only the names of the plant kept and of the one that did not fit are read')

  // The cursor is the last id listed, so no plant is skipped.
  const second = await page(app, 'limit=1000&after=1')
  t.same(second.ids, ['2'])
  const last = await page(app, 'limit=1000&after=599')
  t.same(last.ids, ['600'])

  // A plant larger than a page (a name of 1.5 MiB) still has a page of its own: the cursor moves on.
  await store.create({ id: 601n, name: 'y'.repeat(1.5 * BODY_LIMIT) })
  const alone = await page(app, 'limit=1000&after=600')
  t.same(alone.ids, ['601'])
  t.ok(alone.bytes > MAX_PAGE_BYTES, 'one plant, however large')
  t.same((await page(app, 'limit=1000&after=601')).ids, [], 'an empty page is the end')
})

t.test('paging through plants of mixed sizes lists each exactly once, in order, in pages of at most MAX_PAGE_BYTES', async (t) => {
  const { app, store } = await build(t)
  const expected: string[] = []
  for (let index = 0; index < 40; index++) {
    const id = BigInt(index * 7 - 100)
    // 0 to ~390 KB of escaped text: a few plants fill a page, some pages hold one.
    const name = '"\n\u00e9\u{1f600}'.repeat((index * 7919) % 30_000)
    await store.create({ id, name, ...(index % 3 === 0 && { tag: 't'.repeat(index * 1000) }) })
    expected.push(String(id))
  }
  const seen = await walk(t, app, 1000)
  t.same(seen, expected)
  const small = await walk(t, app, 3)
  t.same(small, expected, 'with a small limit too')
})

// The byte count the route makes must be the serializer's: a page that fills MAX_PAGE_BYTES exactly
// holds all its plants, one byte more and its last plant waits for the next page.
async function fillsExactly (t: Test, app: App, store: PlantStore) {
  const plants: NewPlant[] = [
    { id: -9223372036854775808n, name: 'quote " backslash \\ newline \n tab \t control \u0001', tag: '\u00e9t\u00e9 \u{1f331}' },
    { id: 42n, name: '\u2028\u2029 </script> \ufeff' },
    { id: 9223372036854775807n, name: '', tag: '' }
  ]
  for (const plant of plants) await store.create(plant)
  const firstTwo = await page(app, 'limit=2')
  t.same(firstTwo.ids, ['-9223372036854775808', '42'])

  // Plant 50, listed third, pads the page of the first three to exactly MAX_PAGE_BYTES.
  const padding = MAX_PAGE_BYTES - firstTwo.bytes - ',{"id":50,"name":""}'.length
  await store.create({ id: 50n, name: 'p'.repeat(padding) })
  const full = await page(app, 'limit=1000')
  t.equal(full.bytes, MAX_PAGE_BYTES, 'the page is exactly MAX_PAGE_BYTES')
  t.same(full.ids, ['-9223372036854775808', '42', '50'], 'it holds the three plants that fit')
  t.same((await page(app, 'limit=1000&after=50')).ids, ['9223372036854775807'], 'the next page goes on after them')

  // One byte more: plant 50 no longer fits, and starts the next page.
  await store.delete(50n)
  await store.create({ id: 50n, name: 'p'.repeat(padding + 1) })
  const shorter = await page(app, 'limit=1000')
  t.same(shorter.ids, ['-9223372036854775808', '42'])
  t.equal(shorter.bytes, firstTwo.bytes)
  t.same((await page(app, 'limit=1000&after=42')).ids, ['50', '9223372036854775807'], 'the next page starts with it')
}

t.test('a page filling MAX_PAGE_BYTES exactly holds every plant; one byte more ends it early (memory store)', async (t) => {
  const { app, store } = await build(t)
  await fillsExactly(t, app, store)
})

t.test('the same on a real SQLite file', async (t) => {
  const store = openSqliteStore(join(t.testdir(), 'plants.db'))
  const { app } = await build(t, { store })
  t.teardown(() => store.close())
  await fillsExactly(t, app, store)
})
