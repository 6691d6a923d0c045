/**
 * The service's entry (service/server.ts) as an operator runs it: its commands (schema-sql, backup)
 * instead of the service, a production start without tokens refused, a delivery-only start that
 * needs none. test/system/server-process.test.ts has the rest.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { schemaSql } from '../../stores/postgres/schema-sql.js'
import { openSqliteStore } from '../../stores/sqlite/store.js'
import { startReceiver } from '../helpers/receiver.js'
import { exitWithin, linesOf, runEntry, spawnServer, startServer, START_TIMEOUT } from '../helpers/server-process.js'
import { webhookEnv } from '../helpers/webhook-crash.js'
import { newSecret } from '../helpers/webhooks.js'

// Each test waits on processes of its own: side by side.
t.jobs = 4

t.test('NODE_ENV=production without tokens refuses to start, with one line naming API_TOKENS', async (t) => {
  const server = spawnServer(t, { NODE_ENV: 'production' })
  // Its settings are read once every module is loaded: refusing takes as long as a start.
  t.same(await exitWithin(server, START_TIMEOUT), { code: 1, signal: null }, 'exits with code 1')
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, `exactly one line on stderr: ${server.stderr()}`)
  t.match(lines[0], /^Invalid configuration: API_TOKENS or API_TOKENS_FILE must be set when NODE_ENV=production/)
  t.notMatch(server.stdout(), /Server listening/, 'it never listened')
})

t.test('`server schema-sql` prints the SQL an administrator runs, and exits 0 without serving', async (t) => {
  const { code, stdout } = await runEntry(['schema-sql'])
  t.equal(code, 0)
  t.equal(stdout.trim(), schemaSql().trim(), 'the SQL, as schemaSql() makes it')
})

t.test('`server backup <file>`: a checked copy of the SQLite store, said in one line', async (t) => {
  const dir = t.testdir()
  const source = join(dir, 'plants.db')
  const store = openSqliteStore(source)
  for (const id of [1n, 2n, 3n]) await store.create({ id, name: 'kept' })
  await store.close()
  const copy = join(dir, 'copy.db')
  const backup = await runEntry(['backup', copy], { DATABASE_URL: `sqlite:${source}` })
  t.same([backup.code, backup.stdout], [0, `Backed up ${source} to ${copy}: 3 plants, integrity_check ok\n`])
  const copied = openSqliteStore(copy)
  t.teardown(() => copied.close())
  t.equal((await copied.list({ limit: 10 })).length, 3, 'the copy holds the plants')
})

t.test('backup refuses an existing destination, a store that is not SQLite, and a bad command line', async (t) => {
  const dir = t.testdir({})
  const source = join(dir, 'plants.db')
  new Database(source).close()
  const [existing, postgres, usage] = await Promise.all([
    runEntry(['backup', source], { DATABASE_URL: `sqlite:${source}` }),
    runEntry(['backup', join(dir, 'b.db')], { DATABASE_URL: 'postgres://127.0.0.1/x' }),
    runEntry(['restore'])
  ])
  t.same([existing.code, existing.stderr], [1, `Backup failed: ${source} already exists: give a new path\n`])
  t.same([postgres.code, postgres.stderr], [1, 'backup copies a SQLite store; DATABASE_URL is not sqlite:<path> (for PostgreSQL use pg_dump)\n'])
  t.equal(usage.code, 1)
  t.match(usage.stderr, /^Usage: node server\.mjs backup <destination file>/)
  t.notOk(existsSync(join(dir, 'b.db')), 'nothing is written on a refusal')
})

t.test('WEBHOOK_DELIVERY=only starts with no token configured and generates none: it serves no route that takes one', async (t) => {
  const receiver = await startReceiver(t)
  const server = await startServer(t, {
    ...webhookEnv(`sqlite:${join(t.testdir(), 'plants.db')}`, receiver.url, newSecret()), WEBHOOK_DELIVERY: 'only', API_TOKENS: undefined
  })
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'it answers /healthz')
  t.equal((await fetch(`${server.url}/plants`, { method: 'POST', body: '{}' })).status, 404, 'no plant route')
  t.notMatch(server.stderr(), /generated token/, 'no token generated')
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 15_000), { code: 0, signal: null }, 'stops cleanly')
})
