/**
 * The PostgreSQL store's promise on the clock: a request fails with 503 within 2 s when the server
 * is unreachable, silent, stuck mid-connection or down, or another session holds the row, and the
 * store opens within 2 s all the same. The store tier (test/stores/store-contract.test.ts) checks
 * which of the store's bounds ends each case; this measures them in real time.
 */
import { performance } from 'node:perf_hooks'
import t, { type Test } from 'tap'
import { StoreUnavailableError } from '../../../plugins/http/errors.js'
import { openPostgresStore } from '../../../plugins/store/postgres/store.js'
import type { PlantStore } from '../../../plugins/store/types.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { behindProxy, heldRow, silentServerUrl, UNREACHABLE_URL } from '../../helpers/postgres-outages.js'

const pgSkip = await postgresSkip()
const BOUND_MS = 2000

/** Runs `work` and asserts that it settled within BOUND_MS: what it settled with, its value or its error. */
async function within (t: Test, label: string, work: () => Promise<unknown>): Promise<unknown> {
  const start = performance.now()
  const outcome = await work().catch((error: unknown) => error)
  const elapsed = Math.round(performance.now() - start)
  t.ok(elapsed < BOUND_MS, `${label}: within ${BOUND_MS} ms (${elapsed} ms)`)
  return outcome
}

async function unavailableWithin (t: Test, label: string, work: () => Promise<unknown>) {
  t.type(await within(t, label, work), StoreUnavailableError, `${label}: 503`)
}

async function openedWithin (t: Test, url: string): Promise<PlantStore> {
  const store = await within(t, 'open', () => openPostgresStore(url)) as PlantStore
  t.teardown(() => store.close())
  return store
}

t.test('an unreachable server', { skip: pgSkip }, async (t) => {
  const store = await openedWithin(t, UNREACHABLE_URL)
  await unavailableWithin(t, 'create', () => store.create({ id: 1n, name: 'fern' }))
  await unavailableWithin(t, 'ping', () => store.ping())
})

t.test('a server that accepts connections but never answers', { skip: pgSkip }, async (t) => {
  const store = await openedWithin(t, await silentServerUrl(t))
  await unavailableWithin(t, 'create', () => store.create({ id: 1n, name: 'fern' }))
  await unavailableWithin(t, 'ping', () => store.ping())
})

t.test('a server that stops answering mid-connection', { skip: pgSkip }, async (t) => {
  const { url, proxy } = await behindProxy(t, await freshDatabase(t))
  const store = await openedWithin(t, url)
  await store.create({ id: 1n, name: 'fern' })
  proxy.freeze()
  await unavailableWithin(t, 'a read on a pooled connection', () => store.get(1n))
  proxy.thaw()
})

t.test('a server that is down, from the start', { skip: pgSkip }, async (t) => {
  const { url, proxy } = await behindProxy(t, await freshDatabase(t))
  proxy.down()
  const store = await openedWithin(t, url)
  await unavailableWithin(t, 'create', () => store.create({ id: 1n, name: 'fern' }))
  await unavailableWithin(t, 'ping', () => store.ping())
})

t.test('a row another session holds', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openedWithin(t, url)
  await heldRow(t, url)
  await unavailableWithin(t, 'a create of it', () => store.create({ id: 1n, name: 'fern' }))
})
