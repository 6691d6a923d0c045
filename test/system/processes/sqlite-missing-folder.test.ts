/**
 * A mistyped SQLite path must not start a service on a new, empty database in folders made for
 * it: only the default ./data is made; any other missing folder is a setting to fix.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { send } from '../../helpers/load.js'
import { exitWithin, linesOf, spawnServer, startServer, START_TIMEOUT } from '../../helpers/server-process.js'

const TOKEN = 'sqlite-missing-folder-token'

t.test('a path whose folder does not exist: exit 1 with one line naming DATABASE_URL, nothing made', async (t) => {
  const dir = t.testdir()
  const runs = [join(dir, 'typo-dir', 'deeper', 'plants.db'), join(dir, 'typo', 'plants.db')].map((path) => ({
    path, server: spawnServer(t, { API_TOKENS: TOKEN, DATABASE_URL: `sqlite:${path}` })
  }))
  for (const { path, server } of runs) {
    // Whichever comes first: the exit, or a start on a database it should not have made.
    const listening = server.waitForLog((line) => /^Server listening/.test(line.msg ?? '')).then(() => 'listening', () => 'exited')
    t.same(await Promise.race([exitWithin(server, START_TIMEOUT), listening]), { code: 1, signal: null }, `${path}: exits with code 1`)
    const lines = linesOf(server.stderr())
    t.equal(lines.length, 1, `${path}: exactly one line on stderr:\n${server.stderr()}`)
    t.match(lines[0] ?? '', /^Invalid configuration: DATABASE_URL .*folder .* does not exist/, `${path}: the line names DATABASE_URL and the missing folder`)
    t.notMatch(server.stdout(), /Server listening/, `${path}: it never listened`)
  }
  t.notOk(existsSync(join(dir, 'typo-dir')), 'no folder was made for the first')
  t.notOk(existsSync(join(dir, 'typo')), 'nor for the second')
})

t.test('a folder that exists is used as it is', async (t) => {
  const dir = join(t.testdir(), 'there')
  mkdirSync(dir)
  const server = await startServer(t, { API_TOKENS: TOKEN, DATABASE_URL: `sqlite:${join(dir, 'plants.db')}` })
  t.equal((await send(server.url, TOKEN, 'GET', '/readyz')).status, 200, 'ready')
})
