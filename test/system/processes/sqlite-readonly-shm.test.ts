/**
 * The SQLite -shm cannot be written when the service starts (left read-only by another user or
 * a copy): every write would fail, so /readyz must say so. Real files, real processes; as root,
 * whom file modes do not stop, the file is made immutable instead.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { assertFaultsSummarised, isReadinessLine, readinessLines } from '../../helpers/fault-log.js'
import { isStoreUnavailable, plantBody, send } from '../../helpers/load.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'sqlite-readonly-shm-token'

const asRoot = process.getuid?.() === 0

/** Makes `file` impossible to open for writing, for root too. */
function makeReadOnly (file: string) {
  if (asRoot) execFileSync('chattr', ['+i', file])
  else chmodSync(file, 0o444)
}

/** Undoes makeReadOnly, so that the test folder can be removed. */
function makeWritable (file: string) {
  if (asRoot) execFileSync('chattr', ['-i', file])
  else chmodSync(file, 0o644)
}

t.test('a read-only -shm at start: /readyz and every create answer 503', async (t) => {
  const dir = t.testdir()
  const folder = join(dir, 'data')
  mkdirSync(folder)
  const file = join(folder, 'plants.db')
  const env = { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN }
  const first = await startServer(t, env)
  t.equal((await send(first.url, TOKEN, 'POST', '/plants', plantBody('1', 'before'))).status, 200, 'a create before')
  // kill -9 leaves the -wal and the -shm behind.
  first.child.kill('SIGKILL')
  await exitWithin(first, 10_000)
  makeReadOnly(`${file}-shm`)

  try {
    const server = await startServer(t, env)
    const create = await send(server.url, TOKEN, 'POST', '/plants', plantBody('2', 'after'))
    t.ok(isStoreUnavailable(create), 'a create answers 503', { found: create })
    const ready = await send(server.url, TOKEN, 'GET', '/readyz')
    t.ok(isStoreUnavailable(ready), '/readyz answers 503, as creates do', { found: ready })
    t.equal((await send(server.url, TOKEN, 'GET', '/plants/1')).status, 200, 'reads still answer')
    // The log: a warning at start, none per probe; the creates' failures summed up, without stacks.
    t.match(await server.logged(isReadinessLine), [{ level: 40, reason: /readonly|read-only/i }],
      'one warning that the store does not answer, and why')
    for (let probe = 0; probe < 10; probe++) await send(server.url, TOKEN, 'GET', '/readyz')
    t.equal(readinessLines(server.logs()).length, 1, 'no more for 10 probes')
    await assertFaultsSummarised(t, server, 2000, (id) => send(server.url, TOKEN, 'POST', '/plants', plantBody(String(id + 3), 'after')))
    server.child.kill('SIGKILL')
    await exitWithin(server, 10_000)
  } finally {
    makeWritable(`${file}-shm`)
  }
})
