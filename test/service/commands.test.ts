/**
 * The operators' commands (`node server.mjs backup <file>`, `schema-sql`), run in process with the
 * environment and output a test gives them; test/service/server-entry.test.ts runs one through the entry.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { runCommand } from '../../service/entry-points/commands.js'
import { schemaSql } from '../../service/commands/schema-sql.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'

/** `runCommand(args)` with `env`: its exit code and what it wrote. */
async function run (args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = ''
  let stderr = ''
  const code = await runCommand(args, { env, stdout: { write: (text) => { stdout += text } }, stderr: { write: (text) => { stderr += text } } })
  return { code, stdout, stderr }
}

t.test('schema-sql prints the SQL an administrator runs', async (t) => {
  t.same(await run(['schema-sql']), { code: 0, stdout: schemaSql(), stderr: '' })
})

t.test('backup <file>: a checked copy of the SQLite store, said in one line', async (t) => {
  const dir = t.testdir()
  const source = join(dir, 'plants.db')
  const store = openSqliteStore(source)
  for (const id of [1n, 2n, 3n]) await store.create({ id, name: 'kept' })
  await store.close()
  const copy = join(dir, 'copy.db')
  t.same(await run(['backup', copy], { DATABASE_URL: `sqlite:${source}` }),
    { code: 0, stdout: `Backed up ${source} to ${copy}: 3 plants, integrity_check ok\n`, stderr: '' })
  const copied = openSqliteStore(copy)
  t.teardown(() => copied.close())
  t.equal((await copied.list({ limit: 10 })).length, 3, 'the copy holds the plants')
})

t.test('backup refuses an existing destination, a store that is not SQLite, and a bad command line, in one line each', async (t) => {
  const dir = t.testdir({})
  const source = join(dir, 'plants.db')
  new Database(source).close()
  t.same(await run(['backup', source], { DATABASE_URL: `sqlite:${source}` }),
    { code: 1, stdout: '', stderr: `Backup failed: ${source} already exists: give a new path\n` })
  t.same(await run(['backup', join(dir, 'b.db')], { DATABASE_URL: 'postgres://127.0.0.1/x' }),
    { code: 1, stdout: '', stderr: 'backup copies a SQLite store; DATABASE_URL is not sqlite:<path> (for PostgreSQL use pg_dump)\n' })
  for (const args of [['restore'], ['backup'], ['backup', 'a.db', 'b.db'], ['schema-sql', 'x']]) {
    const usage = await run(args)
    t.equal(usage.code, 1, `${args.join(' ')}: exit code 1`)
    t.match(usage.stderr, /^Usage: node server\.mjs backup <destination file> .*\n$/, 'the usage line')
  }
  t.notOk(existsSync(join(dir, 'b.db')), 'nothing is written on a refusal')
})
