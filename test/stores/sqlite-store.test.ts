import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { openStore } from '../../plugins/store/index.js'
import { BOOKKEEPING_CHECKPOINT_MS, openSqliteStore, WAL_CHECK_MS, WAL_LIMIT_BYTES } from '../../plugins/store/sqlite/store.js'
import { SQLITE_SCHEMA_VERSION } from '../../plugins/store/sqlite/schema-version.js'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN } from '../helpers/app.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { storedSqliteIds } from '../helpers/sqlite-ids.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

t.test('the file is created on first start, in WAL mode with fsync on every commit', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  t.teardown(() => store.close())
  t.ok(existsSync(file))
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  t.equal(db.pragma('user_version', { simple: true }), SQLITE_SCHEMA_VERSION, 'the schema is at its latest version')
  t.equal(SQLITE_SCHEMA_VERSION, 4, 'version 2: the events\' trace_context column; 3: revisions and the tag index; 4: the change feed\'s identity')
})

t.test('a reopened file keeps its plants and is not migrated twice', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const first = openSqliteStore(file)
  await first.create({ id: 2n ** 62n + 1n, name: 'kept', tag: 'x' })
  await first.close()
  const second = openSqliteStore(file)
  t.teardown(() => second.close())
  t.same(await second.get(2n ** 62n + 1n), { name: 'kept', tag: 'x' })
})

t.test('the DATABASE_URL forms open the right store', async (t) => {
  const dir = t.testdir()
  const sqlite = await openStore(`sqlite:${join(dir, 'x.db')}`)
  await sqlite.create({ id: 1n, name: 'n' })
  await sqlite.close()
  t.ok(existsSync(join(dir, 'x.db')))
  const memory = await openStore('memory:')
  t.same(await memory.list({ limit: 10 }), [])
  await t.rejects(openStore('mysql://localhost/x'), { name: 'StoreOpenError' })
  writeFileSync(join(dir, 'file'), '')
  await t.rejects(openStore(`sqlite:${join(dir, 'file', 'x.db')}`), { name: 'StoreOpenError' }, 'a path below a file cannot be opened')
})

t.test('a store the app opened is closed with the app', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const app = await buildApp({ tokens: [TOKEN], store: `sqlite:${file}` })
  const created = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":1,"name":"n"}' })
  t.equal(created.statusCode, 200)
  await app.close()
  t.notOk(existsSync(`${file}-wal`), 'the last connection closed cleanly: the WAL was checkpointed and removed')
})

t.test('a locked database answers 503, then service resumes when the lock goes', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const app = await buildApp({ tokens: [TOKEN], store: `sqlite:${file}` })
  t.teardown(() => app.close())
  const other = new Database(file)
  t.teardown(() => other.close())
  other.exec('BEGIN EXCLUSIVE')
  const post = (id: number) => app.inject({
    method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"n"}`
  })
  const locked = await post(1)
  t.equal(locked.statusCode, 503)
  t.same(locked.json(), { error: 503, message: 'The plant store is unavailable, try again later' })
  const deleting = await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH })
  t.equal(deleting.statusCode, 503, 'a delete, which writes too, is 503 as well')
  other.exec('COMMIT')
  t.equal((await post(1)).statusCode, 200)
})

// The delivery thread's results: one given up is a delivery sent again once its lease runs out.
t.test('a bookkeeping connection waits out a lock the API connection gives up on after 250 ms', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const api = openSqliteStore(file)
  t.teardown(() => api.close())
  const bookkeeping = openSqliteStore(file, { bookkeeping: true })
  t.teardown(() => bookkeeping.close())
  const other = new Database(file)
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  // Started first, the bookkeeping create is waiting when the API's gives up; the lock goes only then.
  const waiting = bookkeeping.create({ id: 2n, name: 'bookkeeping' })
  let settled = false
  waiting.then(() => { settled = true }, () => { settled = true })
  await t.rejects(api.create({ id: 1n, name: 'api' }), StoreUnavailableError, 'the API connection answers 503 while the lock is held')
  t.notOk(settled, 'the bookkeeping connection still waits')
  other.exec('COMMIT')
  await t.resolves(waiting, 'the bookkeeping connection commits once the lock goes')
  t.same(await api.get(2n), { name: 'bookkeeping' })
  t.equal(await api.get(1n), undefined)
})

t.test('a file that is not an SQLite database cannot be opened, and nothing is left open', async (t) => {
  const file = join(t.testdir(), 'not-a-database.db')
  writeFileSync(file, 'x'.repeat(4096))
  t.throws(() => openSqliteStore(file), { code: 'SQLITE_NOTADB' })
})

t.test('an error that is not the database\'s own is passed on unchanged', async (t) => {
  const store = openSqliteStore(join(t.testdir(), 'plants.db'))
  t.teardown(() => store.close())
  // The HTTP schema never lets such an id through; the driver refuses it with a RangeError.
  await t.rejects(store.create({ id: 2n ** 63n, name: 'n' }), RangeError)
})

t.test('creates not yet committed when the store closes are committed first', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  const created = Promise.all([store.create({ id: 1n, name: 'a' }), store.create({ id: 2n, name: 'b' })])
  await store.close()
  t.same(await created, [{ name: 'a' }, { name: 'b' }])
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT name FROM plants ORDER BY id').all(), [{ name: 'a' }, { name: 'b' }])
})

t.test('one batch: a taken id fails alone, the others in the same commit are stored', async (t) => {
  const store = openSqliteStore(join(t.testdir(), 'plants.db'))
  t.teardown(() => store.close())
  const results = await Promise.allSettled([
    store.create({ id: 1n, name: 'first' }),
    store.create({ id: 1n, name: 'second' }),
    store.create({ id: 2n, name: 'third' })
  ])
  t.same(results.map((result) => result.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, { statusCode: 409 })
  t.same(await store.list({ limit: 10 }), [{ id: 1n, name: 'first' }, { id: 2n, name: 'third' }])
})

t.test('a database error that is not about availability is a 500, not a 503', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const app = await buildApp({ tokens: [TOKEN], store: `sqlite:${file}` })
  t.teardown(() => app.close())
  const other = new Database(file)
  other.exec('DROP TABLE plants')
  other.close()
  const response = await app.inject({ url: '/plants/1', headers: AUTH })
  t.equal(response.statusCode, 500)
  t.same(response.json(), { error: 500, message: 'Internal server error' })
})

t.test('a missing folder is an error at once, also where a recursive mkdir would spin', async (t) => {
  const dir = t.testdir()
  t.throws(() => openSqliteStore(join(dir, 'a', 'b', 'c', 'plants.db')), { message: /^the folder .* does not exist/ }, 'nothing made')
  t.notOk(existsSync(join(dir, 'a')))
  t.throws(() => openSqliteStore('/proc/x/y.db'), { message: /^the folder \/proc\/x does not exist/ }, 'under /proc')
  writeFileSync(join(dir, 'file'), '')
  t.throws(() => openSqliteStore(join(dir, 'file', 'sub', 'x.db')), { message: /^the folder .* does not exist/ }, 'below a regular file')
  t.throws(() => openSqliteStore(join(dir, 'file', 'x.db')), { code: 'SQLITE_CANTOPEN' }, 'a regular file for a folder')
})

t.test('the default sqlite:./data/plants.db makes ./data in the working directory, as before', async (t) => {
  const cwd = t.testdir()
  const before = process.cwd()
  process.chdir(cwd)
  t.teardown(() => process.chdir(before))
  const store = await openStore('sqlite:./data/plants.db')
  t.teardown(() => store.close())
  t.strictSame(await store.list({ limit: 10 }), [], 'it opens an empty store')
  t.ok(existsSync(join(cwd, 'data', 'plants.db')), './data/plants.db was made')
})

t.test('through openStore, a missing folder is a StoreOpenError that names it', async (t) => {
  const folder = join(t.testdir(), 'typo')
  await t.rejects(openStore(`sqlite:${join(folder, 'plants.db')}`), { name: 'StoreOpenError', message: new RegExp(`folder ${folder} does not exist`) })
  t.notOk(existsSync(folder), 'nothing was made')
})

t.test('a file moved away or replaced while open: writes, reads and ping are 503; back in place, it works again', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'plants.db')
  const store = openSqliteStore(file)
  t.teardown(() => store.close())
  await store.create({ id: 1n, name: 'kept' })
  const unavailable = StoreUnavailableError

  renameSync(file, join(dir, 'moved.db'))
  await t.rejects(store.create({ id: 2n, name: 'lost' }), unavailable, 'a create with no file at the path')
  await t.rejects(store.get(1n), unavailable, 'a read, once a write found the file gone')
  await t.rejects(store.list({ limit: 10 }), unavailable, 'a listing')
  await t.rejects(store.delete(1n), unavailable, 'a delete')
  await t.rejects(store.ping(), unavailable, 'ping')

  renameSync(join(dir, 'moved.db'), file)
  await t.resolves(store.ping(), 'ping once the file opened is back at its path')
  t.strictSame(await store.list({ limit: 10 }), [{ id: 1n, name: 'kept' }], 'the create refused was not kept')

  mkdirSync(join(dir, 'other'))
  const other = openSqliteStore(join(dir, 'other', 'plants.db'))
  await other.close()
  renameSync(join(dir, 'other', 'plants.db'), file)
  await t.rejects(store.create({ id: 3n, name: 'lost' }), unavailable, 'a create into a file replaced by another')
  await t.rejects(store.ping(), unavailable, 'ping')
})

const FRAME_BYTES = 4096 + 24
const fileSize = (path: string) => existsSync(path) ? statSync(path).size : 0
const outboxOptions = (checkpointedElsewhere: boolean) => ({
  endpoints: [{ name: 'e', events: ['plant.created' as const] }],
  payloads: eventPayloads,
  checkpointedElsewhere
})

t.test('an outbox checkpointed elsewhere: the store\'s own commits never copy the log into the database; SQLite\'s would at 1,000 pages', async (t) => {
  const most: Record<string, number> = {}
  for (const elsewhere of [false, true]) {
    const file = join(t.testdir(), `plants-${elsewhere}.db`)
    const store = openSqliteStore(file)
    await store.openOutbox(outboxOptions(elsewhere))
    // Commit after commit, each a few pages of the log: past SQLite's automatic checkpoint (1,000
    // pages), up to the store's own bound (4 MiB, about 1,018 pages), past which its timer truncates.
    let bytes = 0
    for (let id = 1n; id <= 600n && bytes <= WAL_LIMIT_BYTES; id++) {
      await store.create({ id, name: 'n'.repeat(500) })
      bytes = Math.max(bytes, fileSize(`${file}-wal`))
    }
    await store.close()
    most[String(elsewhere)] = bytes
  }
  t.ok(most.false < 1010 * FRAME_BYTES, `left to itself, the log starts over at 1,000 pages (at most ${most.false} bytes)`)
  t.ok(most.true > WAL_LIMIT_BYTES, `checkpointed elsewhere, it grows on, past the store's own bound (${most.true} bytes)`)
})

t.test('a bookkeeping connection checkpoints the log on its own timer, with no write of its own', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  t.teardown(() => store.close())
  await store.openOutbox(outboxOptions(true))
  for (let id = 1n; id <= 50n; id++) await store.create({ id, name: 'n'.repeat(2000) })
  const before = fileSize(file)
  const clock = fakeClock()
  const bookkeeping = openSqliteStore(file, { bookkeeping: true, clock })
  t.teardown(() => bookkeeping.close())
  await clock.advance(BOOKKEEPING_CHECKPOINT_MS - 1)
  t.equal(fileSize(file), before, 'nothing copied before its timer fires')
  await clock.advance(1)
  t.ok(fileSize(file) > before, `the database file took in the log's pages (${before} -> ${fileSize(file)} bytes)`)
})

t.test('a reader holding a snapshot lets the log grow past its bound; once it lets go, the store\'s timer truncates it, with no write', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const clock = fakeClock()
  const store = openSqliteStore(file, { clock })
  t.teardown(() => store.close())
  await store.create({ id: 1n, name: 'first' })
  const small = fileSize(`${file}-wal`)
  await clock.advance(WAL_CHECK_MS)
  t.equal(fileSize(`${file}-wal`), small, 'a tick leaves a log within its bound as it is')
  const reader = new Database(file, { readonly: true })
  t.teardown(() => reader.close())
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM plants').get()
  for (let id = 2n; fileSize(`${file}-wal`) <= 2 * WAL_LIMIT_BYTES; id++) await store.create({ id, name: 'n'.repeat(2000) })
  await clock.advance(WAL_CHECK_MS) // a tick of the store's timer: the reader still holds
  const grown = fileSize(`${file}-wal`)
  t.ok(grown > 2 * WAL_LIMIT_BYTES, `the log grew past twice the bound while the reader held (${grown} bytes)`)
  reader.exec('COMMIT')
  await clock.advance(WAL_CHECK_MS)
  t.ok(fileSize(`${file}-wal`) <= WAL_LIMIT_BYTES, `at the next tick, back within the bound (${grown} -> ${fileSize(`${file}-wal`)} bytes)`)
  t.equal((await store.list({ limit: 1 })).length, 1, 'and the plants are there')
})

t.test('the database renamed away while open: the log is emptied into it, the warning names it, and it holds every plant', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'plants.db')
  const warnings: string[] = []
  const store = openSqliteStore(file, { log: { warn: (line: string) => warnings.push(line), info: () => {} } })
  for (const id of [1n, 2n, 3n]) await store.create({ id, name: 'acknowledged' })
  const moved = join(dir, 'moved.db')
  renameSync(file, moved)
  await t.rejects(store.create({ id: 4n, name: 'refused' }), StoreUnavailableError, 'a create answers 503')
  await store.close()
  t.match(warnings, [new RegExp(`every plant acknowledged is in ${moved}$`)], 'one warning, naming where the plants are')
  t.strictSame(storedSqliteIds(moved), ['1', '2', '3'], 'the moved file holds every acknowledged plant')
})

t.test('the -wal removed while open, the store copies its plants into the database and refuses writes; closed, the file holds them', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const store = openSqliteStore(file)
  await store.create({ id: 1n, name: 'in the log only' })
  rmSync(`${file}-wal`)
  await t.rejects(store.create({ id: 2n, name: 'after' }), StoreUnavailableError, 'a create answers 503')
  await t.rejects(store.ping(), StoreUnavailableError, 'ping too')
  await store.close()
  t.strictSame(storedSqliteIds(file), ['1'], 'plant 1, acknowledged before the removal, is in the database file')
})
