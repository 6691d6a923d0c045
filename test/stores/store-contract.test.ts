import { createRequire } from 'node:module'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { PlantExistsError, StoreUnavailableError } from '../../plugins/http/errors.js'
import { openStore, STORE_URL_PATTERN, StoreOpenError } from '../../plugins/store/index.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { storeContract, type StoreOutage } from '../../plugins/store/contract.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { endSessions, freshDatabase, postgresSkip, SERVER_URL, sqlOn } from '../helpers/postgres.js'
import { behindProxy, heldRow, silentServerUrl, UNREACHABLE_URL } from '../helpers/postgres-outages.js'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import plantStore from '../../src/plugin.js'

interface StoreKind {
  name: string
  skip: string | false
  /** A new, empty store (the contract closes it). */
  open (t: Test): Promise<PlantStore>
  /** What the store does with text the HTTP schema refuses: see the test that documents it. */
  nul: 'kept' | 'refused'
  /** What `'a\ud800b'` reads back as. */
  loneSurrogate: string
  /** A new, empty store and a way to make it unavailable and back, for a store that can be. */
  openWithOutage?: (t: Test) => Promise<StoreOutage>
}

function closing (t: Test, store: PlantStore) {
  t.teardown(() => store.close())
  return store
}

const pgSkip = await postgresSkip()
const sqliteKeepsSurrogateBytes = Number(process.versions.node.split('.')[0]) < 24 &&
  createRequire(import.meta.url)('better-sqlite3/package.json').version.startsWith('12.')

// A file name of its own for each store a test opens.
let files = 0
const newFile = (t: Test) => join(t.testdir(), `plants-${++files}.db`)

const KINDS: StoreKind[] = [
  {
    name: 'memory',
    skip: false,
    open: async () => createMemoryStore(),
    nul: 'kept',
    loneSurrogate: 'a\ud800b'
  },
  {
    name: 'sqlite',
    skip: false,
    open: async (t) => openSqliteStore(newFile(t)),
    nul: 'kept',
    // better-sqlite3 12 on Node 20 and 22 writes the surrogate as the invalid UTF-8 bytes ED A0 80,
    // three U+FFFD on reading; Node 24's (and 13's Node-API) conversion writes one U+FFFD.
    loneSurrogate: sqliteKeepsSurrogateBytes ? 'a\ufffd\ufffd\ufffdb' : 'a\ufffdb',
    async openWithOutage (t) {
      const file = newFile(t)
      const store = openSqliteStore(file)
      // Another connection holding the write lock.
      const other = new Database(file)
      t.teardown(() => other.close())
      return {
        store,
        down: () => { other.exec('BEGIN EXCLUSIVE') },
        up: () => { if (other.inTransaction) other.exec('ROLLBACK') }
      }
    }
  },
  {
    // A host's own pg.Pool, which the store uses and leaves open.
    name: 'postgres on a shared pool',
    skip: pgSkip,
    open: async (t) => openPostgresStore(sharedPool(t, await freshDatabase(t))),
    nul: 'refused',
    loneSurrogate: 'a\ufffdb',
    openWithOutage: (t) => postgresBehindProxy(t, (url) => openPostgresStore(sharedPool(t, url)))
  },
  {
    name: 'postgres',
    skip: pgSkip,
    open: async (t) => openPostgresStore(await freshDatabase(t)),
    nul: 'refused',
    loneSurrogate: 'a\ufffdb',
    openWithOutage: (t) => postgresBehindProxy(t, openPostgresStore)
  }
]

/** A PostgreSQL store opened on a fresh database behind a proxy that can cut every connection at once. */
async function postgresBehindProxy (t: Test, open: (url: string) => Promise<PlantStore>): Promise<StoreOutage> {
  const { url, proxy } = await behindProxy(t, await freshDatabase(t))
  const store = await open(url)
  return { store, down: () => proxy.down(), up: () => proxy.up() }
}

/** A host's pool, as a host would make it (with its own listener for idle connections' errors). */
function sharedPool (t: Test, url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 1000, max: 4 })
  pool.on('error', () => {})
  t.teardown(() => pool.end())
  return pool
}

/** The rejection of `promise`, failing the test when it resolves instead. */
async function rejection (t: Test, promise: Promise<unknown>): Promise<Error> {
  try {
    await promise
  } catch (error) {
    return error as Error
  }
  t.fail('expected a rejection')
  return new Error('resolved')
}

for (const kind of KINDS) {
  t.test(`${kind.name} store`, { skip: kind.skip }, async (t) => {
    // The same contract a host runs on a store of its own (plant-store/store-contract).
    storeContract({
      test: (name, run) => t.test(name, run),
      open: () => kind.open(t),
      openWithOutage: kind.openWithOutage && (() => kind.openWithOutage!(t))
    })

    // The HTTP schema refuses U+0000 and unpaired surrogates (STORABLE_TEXT_PATTERN) because the
    // stores disagree on them: this records what each would do if such a string got through.
    t.test('documents why the API refuses U+0000 and lone surrogates: what this store does with them', async (t) => {
      const store = closing(t, await kind.open(t))
      const nul = 'a\u0000b'
      if (kind.nul === 'kept') {
        await store.create({ id: 1n, name: nul })
        t.strictSame(await store.get(1n), { name: nul }, 'U+0000 kept')
      } else {
        const error = await rejection(t, store.create({ id: 1n, name: nul }))
        t.notOk(error instanceof PlantExistsError || error instanceof StoreUnavailableError, 'U+0000 refused: a 500')
        t.equal(await store.get(1n), undefined, 'nothing stored')
      }
      await store.create({ id: 2n, name: 'a\ud800b' })
      t.strictSame(await store.get(2n), { name: kind.loneSurrogate }, `lone surrogate read back as ${JSON.stringify(kind.loneSurrogate)}`)
    })
  })
}

// What ends a request when the server fails, each bound well within 2 s (the time they take:
// test/system/processes/postgres-unavailable.test.ts).
const ENDED_BY = {
  'a refused connection': { code: 'ECONNREFUSED' },
  'the connect timeout': { message: 'Connection terminated due to connection timeout' },
  "the store's deadline": { message: 'PostgreSQL did not answer within 1000 ms' },
  lock_timeout: { code: '55P03' },
  'a cut connection': { message: /^Connection terminated unexpectedly$|ECONNRESET/ }
}

/** `work` rejects with a 503, its cause what `endedBy` names. */
async function assertUnavailable (t: Test, label: string, work: () => Promise<unknown>, endedBy: keyof typeof ENDED_BY) {
  const error = await rejection(t, work())
  t.ok(error instanceof StoreUnavailableError, `${label}: StoreUnavailableError`, { found: error })
  t.equal((error as InstanceType<typeof StoreUnavailableError>).statusCode, 503, `${label}: 503`)
  t.match(error.cause, ENDED_BY[endedBy], `${label}: ended by ${endedBy}`)
}

t.test('postgres only', { skip: pgSkip }, async (t) => {
  t.test('an unreachable server: open resolves, create and ping reject with 503 at once', async (t) => {
    const opening = openPostgresStore(UNREACHABLE_URL)
    await t.resolves(opening, 'open resolves')
    const store = closing(t, await opening)
    await assertUnavailable(t, 'create', () => store.create({ id: 1n, name: 'fern' }), 'a refused connection')
    await assertUnavailable(t, 'ping', () => store.ping(), 'a refused connection')
  })

  t.test('a server that accepts connections but never answers: 503 at the connect timeout', async (t) => {
    const opening = openPostgresStore(await silentServerUrl(t))
    await t.resolves(opening, 'open resolves')
    const store = closing(t, await opening)
    await assertUnavailable(t, 'create', () => store.create({ id: 1n, name: 'fern' }), 'the connect timeout')
    await assertUnavailable(t, 'ping', () => store.ping(), 'the connect timeout')
  })

  t.test("a server that stops answering mid-connection: 503 at the store's deadline, and service once it answers again", async (t) => {
    const { url, proxy } = await behindProxy(t, await freshDatabase(t))
    const store = closing(t, await openPostgresStore(url))
    await store.create({ id: 1n, name: 'fern' })
    proxy.freeze()
    await assertUnavailable(t, 'a read on a pooled connection', () => store.get(1n), "the store's deadline")
    proxy.thaw()
    t.strictSame(await store.get(1n), { name: 'fern' }, 'a new connection once it answers')
  })

  t.test('a create stuck behind another transaction gives up with 503 at its lock_timeout', async (t) => {
    const url = await freshDatabase(t)
    const store = closing(t, await openPostgresStore(url))
    const blocker = await heldRow(t, url)
    await assertUnavailable(t, 'create', () => store.create({ id: 1n, name: 'fern' }), 'lock_timeout')
    await blocker.query('ROLLBACK')
    t.strictSame(await store.create({ id: 1n, name: 'fern' }), { name: 'fern' }, 'works once the lock is gone')
  })

  t.test('a server that is down at start-up: the table is created once it is back', async (t) => {
    const direct = await freshDatabase(t)
    // A proxy to the test server that, while down, drops every connection at once.
    const { url, proxy } = await behindProxy(t, direct)
    proxy.down()
    const store = closing(t, await openPostgresStore(url))
    await assertUnavailable(t, 'create while down', () => store.create({ id: 1n, name: 'fern' }), 'a cut connection')
    await assertUnavailable(t, 'ping while down', () => store.ping(), 'a cut connection')
    t.strictSame(await sqlOn(direct, "SELECT to_regclass('plants') AS plants"), [{ plants: null }], 'no table yet')
    proxy.up()
    await t.resolves(store.ping(), 'ping once up')
    t.strictSame(await store.create({ id: 1n, name: 'fern' }), { name: 'fern' })
    t.strictSame(await store.get(1n), { name: 'fern' })
  })

  t.test('an idle connection closed by the server does not crash the process', async (t) => {
    const url = await freshDatabase(t)
    const store = closing(t, await openPostgresStore(url))
    await store.create({ id: 1n, name: 'fern' })
    // Resolves once the pool has heard of it.
    const ended = await endSessions(new URL(url).pathname.slice(1))
    t.ok(ended > 0, `${ended} store connection(s) terminated`)
    t.strictSame(await store.get(1n), { name: 'fern' }, 'the store reconnects')
  })

  t.test('stores opened at once on one new database migrate it exactly once, without a race', async (t) => {
    const url = await freshDatabase(t)
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore(url)))
    for (const store of stores) closing(t, store)
    t.strictSame(await sqlOn(url, "SELECT to_regclass('plants') IS NOT NULL AS plants, to_regclass('plant_store_schema') IS NULL AS no_other_table"),
      [{ plants: true, no_other_table: true }], 'one table, plants, and nothing else of the store\'s')
    await stores[0].create({ id: 1n, name: 'fern' })
    for (const store of stores) t.strictSame(await store.get(1n), { name: 'fern' })
  })

  t.test('on a shared pool: close leaves the pool open, and the host\'s int8 stays pg\'s', async (t) => {
    const pool = sharedPool(t, await freshDatabase(t))
    const store = await openPostgresStore(pool, { poolSize: 1 })
    await store.create({ id: 9007199254740993n, name: 'fern' })
    t.strictSame(await store.list({ limit: 10 }), [{ id: 9007199254740993n, name: 'fern' }], 'the store reads exact BigInt ids')
    await store.close()
    t.notOk(pool.ending, 'the pool is not ended')
    t.strictSame((await pool.query('SELECT id FROM plants')).rows, [{ id: '9007199254740993' }],
      'the host\'s own queries still get int8 as pg gives it (a string): the store changed no parser of the pool')
  })

  t.test('the plugin on a host\'s pool: its PostgreSQL store, closed with the app, the pool left open', async (t) => {
    const pool = sharedPool(t, await freshDatabase(t))
    const app = Fastify()
    await app.register(plantStore, { tokens: ['host-token'], store: pool, postgres: { table: 'garden_plants' } })
    const created = await app.inject({
      method: 'POST', url: '/plants', headers: { authorization: 'Bearer host-token', 'content-type': 'application/json' }, payload: '{"id":1,"name":"fern"}'
    })
    t.equal(created.statusCode, 200)
    t.equal((await app.inject('/readyz')).statusCode, 200)
    await app.close()
    t.notOk(pool.ending, 'the pool is the host\'s: still open')
    t.strictSame((await pool.query('SELECT id, name FROM garden_plants')).rows, [{ id: '1', name: 'fern' }])
  })

  t.test('a database that does not exist is an open error, not an unavailable server', async (t) => {
    const url = new URL(SERVER_URL)
    url.pathname = '/plant_store_no_such_database'
    const error = await rejection(t, openPostgresStore(url.href))
    t.match(error, { code: '3D000' })
  })

  t.test('openStore opens postgres:// and postgresql:// URLs', async (t) => {
    const pattern = new RegExp(STORE_URL_PATTERN)
    t.ok(pattern.test('postgres://db.example/plants') && pattern.test('postgresql://db.example/plants'))
    t.notOk(pattern.test('postgres:plants'), 'a URL without // is refused')
    const url = new URL(await freshDatabase(t))
    url.protocol = 'postgresql:'
    const store = closing(t, await openStore(url.href))
    t.strictSame(await store.create({ id: 1n, name: 'fern' }), { name: 'fern' })
    const down = closing(t, await openStore(UNREACHABLE_URL))
    await assertUnavailable(t, 'a down server opens', () => down.ping(), 'a refused connection')
    const error = await rejection(t, openStore('postgres://plants:s3cret@127.0.0.1:99999/plants'))
    t.ok(error instanceof StoreOpenError, 'an unusable URL is a StoreOpenError')
    t.notMatch(error.message, /s3cret/, 'which does not show the password')
  })
})
