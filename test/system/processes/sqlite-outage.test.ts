import { spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { isStoreUnavailable, plantBody, send } from '../../helpers/load.js'
import { assertStopsCleanly, exitWithin, type ServerProcess, startServer } from '../../helpers/server-process.js'

const TOKEN = 'sqlite-outage-token'

/** Writes to a new file until the file system has no byte left: ENOSPC. The bytes written. */
function fillUp (file: string): number {
  const fd = openSync(file, 'w')
  let written = 0
  try {
    // Big chunks first, then ever smaller ones, so that not even a partial block is left.
    for (const size of [1 << 16, 1 << 12, 1 << 9, 1]) {
      const chunk = Buffer.alloc(size, 0x2e)
      for (;;) {
        try {
          written += writeSync(fd, chunk)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break
          throw error
        }
      }
    }
  } finally {
    closeSync(fd)
  }
  return written
}

t.test('SQLite on a full disk: 503, no crash, and creates again once there is space', async (t) => {
  let mounted = false
  // Registered before t.testdir(): the teardowns run (last in, first out: after the server is
  // killed) before the testdir is removed, which must not happen while the tmpfs is mounted on it.
  t.teardown(() => {
    if (mounted) spawnSync('umount', ['-l', disk])
  })
  const disk = join(t.testdir(), 'disk')
  mkdirSync(disk)
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'plant-store-test', disk], { encoding: 'utf8' })
  if (mount.status !== 0) {
    const why = (mount.error?.message ?? mount.stderr).trim().split('\n')[0]
    return t.plan(0, `cannot mount a 2 MiB tmpfs to fill up (${why}); needs root`)
  }
  mounted = true

  const file = join(disk, 'plants.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  const acknowledged: { id: bigint, name: string }[] = []
  const create = async (id: bigint, name: string) => {
    const answer = await request('POST', '/plants', plantBody(String(id), name))
    if (answer.status === 200) acknowledged.push({ id, name })
    return answer
  }
  const isAlive = (server: ServerProcess) => server.child.exitCode === null && server.child.signalCode === null

  t.equal((await create(1n, 'before')).status, 200, 'a create while there is space')

  const filler = join(disk, 'filler')
  const filled = fillUp(filler)
  const free = statfsSync(disk).bavail
  t.comment(`filler: ${filled} bytes, free blocks left: ${free}`)
  t.equal(free, 0, 'the disk is full')

  const full = await create(2n ** 62n + 1n, 'on a full disk')
  t.comment(`create on a full disk: ${full.status} ${full.text} (${Math.round(full.elapsed)} ms)`)
  t.ok(isStoreUnavailable(full), 'a create on a full disk answers 503 Error-shaped: the store is unavailable', { found: full })
  t.notMatch(full.text, /SQLITE|plants\.db|\/disk/, 'the message leaks neither the SQLite code nor the path')
  t.ok(isAlive(server), 'the process did not crash')
  t.equal((await request('GET', '/healthz')).status, 200, '/healthz 200')
  const read = await request('GET', '/plants/1')
  t.strictSame([read.status, read.text], [200, '{"name":"before"}'], 'reads still work on a full disk')
  const failed = await server.logged(({ level, msg, reason }) => level === 40 && msg === 'request failed' && /SQLITE_FULL|disk/i.test(String(reason)))
  t.comment(`logged at level 40 (warn): ${JSON.stringify(failed.map(({ reason }) => reason))}`)
  t.ok(failed.some(({ reason }) => /SQLITE_FULL|disk/i.test(String(reason))),
    'a warning "request failed" was logged, naming the full disk', { found: failed })

  rmSync(filler)
  const again = await create(2n ** 62n + 1n, 'once there is space')
  t.equal(again.status, 200, 'the create refused on a full disk succeeds once there is space, without a restart',
    { found: again })
  t.equal((await create(-3n, 'after')).status, 200, 'and so does another')

  server.child.kill('SIGTERM')
  assertStopsCleanly(t, server, await exitWithin(server, 10_000), 'the server stops cleanly on SIGTERM')
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  db.defaultSafeIntegers(true)
  const rows = db.prepare('SELECT id, name FROM plants ORDER BY id').all()
  t.strictSame(rows, [...acknowledged].sort((a, b) => (a.id < b.id ? -1 : 1)),
    'the file holds every acknowledged plant, and only those')
})
