/**
 * Schema version 4's tag index on a table that already has plants: built after the migration,
 * CONCURRENTLY and with no time bound, for on millions of rows it takes longer than a migration may
 * (5M plants here: CREATE INDEX ran past the migration's 3.5 s, and the store never started). A
 * transaction holding an old snapshot keeps a concurrent build from ending: the store starts and
 * serves meanwhile, tag lists and all, and the index is built once that transaction ends.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { TagIndexBuild } from '../../plugins/store/postgres/tag-index.js'
import { SCHEMA_VERSION } from '../../plugins/store/postgres/schema-version.js'
import { connect, freshDatabase, postgresSkip, roleWithoutCreate, sqlOn } from '../helpers/postgres.js'
import { FENCED_POSTGRES_DDL } from '../helpers/previous-release.js'

const skip = await postgresSkip()
const PLANTS = 500

/** The tag index as the catalog has it: missing, or valid or not. */
async function tagIndex (url: string): Promise<'missing' | 'valid' | 'invalid'> {
  const [row] = await sqlOn<{ valid: boolean }>(url, "SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass('public.plants_tag_id')")
  return row === undefined ? 'missing' : row.valid ? 'valid' : 'invalid'
}

async function until (url: string, state: 'valid' | 'invalid') {
  while (await tagIndex(url) !== state) await sleep(20)
}

/** A database at version 3 (the release before revisions) with PLANTS plants, tagged by their id's parity. */
async function version3WithPlants (t: Test) {
  const url = await freshDatabase(t)
  await sqlOn(url, FENCED_POSTGRES_DDL)
  await sqlOn(url, `INSERT INTO plants (id, name, tag) SELECT g, 'p' || g, CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END FROM generate_series(1, ${PLANTS}) g`)
  return url
}

/** A transaction with a snapshot, held open: a concurrent index build waits for it to end. */
async function oldSnapshot (t: Test, url: string) {
  const client = await connect(url)
  t.teardown(() => client.end())
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
  // No lock on plants (the upgrade's ALTER TABLE would wait for it): a snapshot only.
  await client.query('SELECT 1')
  return { end: () => client.query('COMMIT') }
}

/** `work` on a pool of its own, ended before the test's database is dropped. */
async function withPool (url: string, work: (pool: pg.Pool) => Promise<void>) {
  const pool = new pg.Pool({ connectionString: url })
  pool.on('error', () => {}) // a session the drop ends fails the query running, if any
  try {
    await work(pool)
  } finally {
    await pool.end()
  }
}

function logged () {
  const lines: string[] = []
  return { lines, log: { info: (line: string) => lines.push(`info ${line}`), warn: (line: string) => lines.push(`warn ${line}`) } }
}

t.test('an upgrade of a table with plants starts at once; the index is built concurrently after it, writes going on', { skip }, async (t) => {
  const url = await version3WithPlants(t)
  const snapshot = await oldSnapshot(t, url)
  const { lines, log } = logged()
  const store = await openPostgresStore(url, { log })
  t.teardown(() => store.close())
  t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'the latest version is recorded at once')
  // The build starts after the start, on a connection of its own: its index shows once it began.
  while (await tagIndex(url) === 'missing') await sleep(20)
  t.equal(await tagIndex(url), 'invalid', 'the index is being built, not yet usable')
  await store.create({ id: 1_000_000n, name: 'new', tag: 'even' })
  t.strictSame(await store.update(2n, { name: 'renamed', tag: 'even' }), { name: 'renamed', tag: 'even' }, 'updates go on')
  const page = await store.listTagged('even', { limit: 3, after: 0n })
  t.strictSame(page.map(({ id, name }) => [id, name]), [[2n, 'renamed'], [4n, 'p4'], [6n, 'p6']], 'tag lists read the table meanwhile')
  const other = await openPostgresStore(url, { log })
  await withPool(url, (pool) => new TagIndexBuild(pool, { schema: 'public', table: 'plants' }, log).start())
  t.equal(lines.filter((line) => line.includes('building')).length, 1, 'another instance leaves the build to the one building')
  await other.close()
  await snapshot.end()
  await until(url, 'valid')
  t.match(lines, [/^info plant-store: building the index plants_tag_id concurrently/, /^info plant-store: the index plants_tag_id is built \(\d+ ms\)$/])
  t.strictSame((await store.listTagged('even', { limit: 1000 })).length, PLANTS / 2 + 1, 'the index lists every one')
})

t.test('a build cut short by the store\'s close leaves an invalid index: the next start drops it and builds it again', { skip }, async (t) => {
  const url = await version3WithPlants(t)
  const snapshot = await oldSnapshot(t, url)
  const { lines, log } = logged()
  const store = await openPostgresStore(url, { log })
  await until(url, 'invalid')
  await store.close()
  t.equal(await tagIndex(url), 'invalid', 'close cancelled the build, while the old snapshot still stands')
  t.notOk(lines.some((line) => line.startsWith('warn')), 'a cancel on close is not a failure to warn of')
  await snapshot.end()
  const again = await openPostgresStore(url, { log })
  t.teardown(() => again.close())
  await until(url, 'valid')
  t.equal(lines.filter((line) => line.includes('is built')).length, 1, 'built by the next start')
})

t.test('an index dropped on a database at version 4, for a role that may not make it: the store serves, and warns', { skip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url)).close()
  t.equal(await tagIndex(url), 'valid', 'a new table gets the index in its migration')
  await sqlOn(url, 'DROP INDEX plants_tag_id')
  const { lines, log } = logged()
  const store = await openPostgresStore(await roleWithoutCreate(t, url), { log })
  t.teardown(() => store.close())
  await store.create({ id: 1n, name: 'a', tag: 't' })
  t.strictSame(await store.listTagged('t', { limit: 10 }), [{ id: 1n, name: 'a', tag: 't' }])
  while (!lines.some((line) => line.startsWith('warn'))) await sleep(20)
  t.strictSame(lines, ['info plant-store: building the index plants_tag_id concurrently; tag lists read the table until it is done',
    'warn plant-store: the index plants_tag_id could not be built (must be owner of table plants); tag lists read the table until a start builds it, ' +
    'or its owner runs `CREATE INDEX CONCURRENTLY IF NOT EXISTS "plants_tag_id" ON "public"."plants" (tag, id)`'])
  t.equal(await tagIndex(url), 'missing')
})

t.test('the build itself: nothing to do on a valid index; a close before it connects sends nothing', { skip }, async (t) => {
  const url = await freshDatabase(t)
  await (await openPostgresStore(url)).close()
  const { lines, log } = logged()
  await withPool(url, async (pool) => {
    const build = new TagIndexBuild(pool, { schema: 'public', table: 'plants' }, log)
    build.start()
    await build.close()
    const valid = new TagIndexBuild(pool, { schema: 'public', table: 'plants' }, log)
    t.equal(valid.start(), valid.start(), 'one build at a time')
    await valid.start()
  })
  t.strictSame(lines, [], 'no build, no warning')
  t.equal(await tagIndex(url), 'valid')
})
