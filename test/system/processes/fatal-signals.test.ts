/**
 * Only SIGTERM and SIGINT ask for a graceful shutdown. A fatal signal (a bad memory access, an
 * illegal instruction) must end the process by that signal, so that a supervisor sees a death:
 * a JavaScript listener for it would make the kernel re-run the faulting instruction forever.
 */
import { truncateSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { send } from '../../helpers/load.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-fatal-signals'
const FATAL_SIGNALS = ['SIGBUS', 'SIGSEGV', 'SIGILL', 'SIGFPE'] as const
// A dying process ends at once; a spinning one would still be running.
const DEATH_WITHIN = 5_000

t.test('a fatal signal sent to the process ends it by that signal, at once', async (t) => {
  // All at once: each start-up pays for the TypeScript loader.
  const servers = await Promise.all(FATAL_SIGNALS.map(() => startServer(t, { API_TOKENS: TOKEN })))
  for (const [index, signal] of FATAL_SIGNALS.entries()) {
    const server = servers[index]
    server.child.kill(signal)
    t.same(await exitWithin(server, DEATH_WITHIN), { code: null, signal }, `${signal}: killed by ${signal}`)
    t.notMatch(server.stdout(), /shutting down/, `${signal}: not taken for a request to shut down`)
  }
})

t.test('the SQLite shared-memory file truncated under the running server: it dies by SIGBUS, it does not spin', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  t.equal((await send(server.url, TOKEN, 'POST', '/plants', '{"id":1,"name":"before"}')).status, 200)

  // SQLite maps the -shm file into memory; once it is shorter than the mapping, touching it is a SIGBUS.
  truncateSync(`${file}-shm`, 0)
  send(server.url, TOKEN, 'GET', '/plants/1').catch(() => {})
  t.same(await exitWithin(server, DEATH_WITHIN), { code: null, signal: 'SIGBUS' }, 'killed by SIGBUS')
})
