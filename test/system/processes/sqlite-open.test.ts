import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { exitWithin, linesOf, spawnServer, START_TIMEOUT } from '../../helpers/server-process.js'

// Node's recursive mkdir takes a parent that exists but cannot hold children (procfs answers
// ENOENT, as does a dangling symlink) for a missing one, and spins forever at 100 % CPU.
t.test('an SQLite path whose folder cannot be made: exits at once with one line naming DATABASE_URL', async (t) => {
  const dir = t.testdir()
  symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'))
  const paths = ['/proc/x/y.db', '/proc/self/x/y/z.db', join(dir, 'dangling', 'data', 'plants.db')]
  // All at once: each start-up pays for the TypeScript loader.
  const runs = paths.map((path) => {
    const server = spawnServer(t, { API_TOKENS: 'sqlite-open-token', DATABASE_URL: `sqlite:${path}` })
    return { path, server, started: performance.now(), exit: exitWithin(server, START_TIMEOUT) }
  })
  for (const { path, server, started, exit } of runs) {
    const { code, signal } = await exit
    t.ok(code !== null && code !== 0 && signal === null, `${path}: exits non-zero (code ${code}, signal ${signal})`)
    t.comment(`${path}: exited after ${Math.round(performance.now() - started)} ms`)
    const lines = linesOf(server.stderr())
    t.equal(lines.length, 1, `${path}: exactly one line on stderr:\n${server.stderr()}`)
    t.match(lines[0] ?? '', /^Invalid configuration: DATABASE_URL /, `${path}: the line names DATABASE_URL`)
    t.notMatch(server.stdout(), /Server listening/, `${path}: it never listened`)
  }
})
