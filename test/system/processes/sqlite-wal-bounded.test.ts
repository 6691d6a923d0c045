/**
 * The SQLite write-ahead log stays bounded: while another process holds a read
 * snapshot it cannot start over and grows; once that reader lets go, the service checkpoints and
 * truncates it without waiting for more writes, and /metrics reports its size throughout.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { WAL_LIMIT_BYTES } from '../../../plugins/store/sqlite/store.js'
import { plantBody, pool, send } from '../../helpers/load.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'sqlite-wal-bounded-token'
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3')

// Another process that opens the database, reads in a transaction and keeps it open until told.
const READER = `
const db = new (require(${JSON.stringify(DRIVER)}))(process.argv[1])
db.exec('BEGIN')
db.prepare('SELECT count(*) FROM plants').get()
process.stdout.write('holding\\n')
process.stdin.once('data', () => { db.exec('COMMIT'); process.stdout.write('released\\n') })
`

const sizeOf = (path: string) => { try { return statSync(path).size } catch { return 0 } }

t.test('a reader holding a snapshot: the WAL grows; once it lets go, it is truncated within seconds, idle; /metrics says its size', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const wal = `${file}-wal`
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const walMetric = async () => {
    const text = (await send(server.url, TOKEN, 'GET', '/metrics')).text
    const value = /^plant_store_sqlite_wal_bytes (\d+)$/m.exec(text)?.[1]
    return value === undefined ? undefined : Number(value)
  }

  const reader = spawn(process.execPath, ['-e', READER, file], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { reader.kill() })
  reader.stdout.setEncoding('utf8')
  await once(reader.stdout, 'data')

  // Creates until the log is twice the bound: the reader keeps it from starting over.
  const name = 'n'.repeat(990)
  let next = 1
  while (sizeOf(wal) < 2 * WAL_LIMIT_BYTES && next < 100_000) {
    await pool(500, 50, async () => { await send(server.url, TOKEN, 'POST', '/plants', plantBody(String(next++), name)) })
  }
  await sleep(1500) // past a check of the service's timer: the reader still holds
  const grown = sizeOf(wal)
  t.comment(`with the reader holding: ${next - 1} creates, WAL ${grown} bytes`)
  t.ok(grown >= 2 * WAL_LIMIT_BYTES, `the WAL grew past twice the bound (${grown} bytes)`)
  t.equal(await walMetric(), grown, '/metrics reports its size')

  reader.stdin.write('release\n')
  await once(reader.stdout, 'data')
  const start = Date.now()
  while (sizeOf(wal) > WAL_LIMIT_BYTES && Date.now() - start < 5000) await sleep(100)
  const after = sizeOf(wal)
  t.comment(`reader released: WAL ${after} bytes after ${Date.now() - start} ms, with no write meanwhile`)
  t.ok(after <= WAL_LIMIT_BYTES, `within 5 s the WAL is back within the bound (${grown} -> ${after} bytes)`)
  t.equal(await walMetric(), after, '/metrics reports the new size')
  t.equal((await send(server.url, TOKEN, 'GET', '/plants/1')).status, 200, 'the plants are all there')
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 10_000), { code: 0, signal: null }, 'the service stops cleanly')
})
