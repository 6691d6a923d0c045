/**
 * The SQLite store notices when any of its files is not the one it opened, and a
 * database moved in over its own is never damaged by what it leaves behind. Real
 * files, a real server process, real signals.
 */
import { copyFileSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { isStoreUnavailable, plantBody, send } from '../../helpers/load.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'
import { storedSqliteIds } from '../../helpers/sqlite-ids.js'

const TOKEN = 'sqlite-tampered-files-token'

/** A server on a database of its own in `folder`, holding plants 1 and 2. */
async function serve (t: Test, folder: string) {
  mkdirSync(folder)
  const file = join(folder, 'plants.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  for (const id of ['1', '2']) t.equal((await request('POST', '/plants', plantBody(id, 'before'))).status, 200, `create ${id} before`)
  return { file, server, request }
}

type Served = Awaited<ReturnType<typeof serve>>

// Every test's server is started at once, beforehand: each start pays for the TypeScript loader.
const root = t.testdir()
const started = new Map<string, Promise<Served>>()
const served = (name: string) => {
  let server = started.get(name)
  if (server === undefined) started.set(name, server = serve(t, join(root, `${started.size}`)))
  return server
}

for (const [label, tamper] of [
  ['-wal removed after a checkpoint', (file: string) => {
    // As the issue found it: an outside checkpoint first, so that the database alone holds 1 and 2.
    const other = new Database(file)
    other.pragma('wal_checkpoint(TRUNCATE)')
    other.close()
    rmSync(`${file}-wal`)
  }],
  ['-wal removed, its plants not yet checkpointed', (file: string) => rmSync(`${file}-wal`)],
  ['-shm replaced by a copy', (file: string) => {
    copyFileSync(`${file}-shm`, `${file}-shm.copy`)
    renameSync(`${file}-shm.copy`, `${file}-shm`)
  }]
] as const) {
  served(label)
  t.test(`${label}: creates and /readyz 503 before anything more is acknowledged; after kill -9 no acknowledged plant is lost`, async (t) => {
    const { file, server, request } = await served(label)
    tamper(file)
    const creates = []
    for (let id = 3; id <= 12; id++) creates.push(await request('POST', '/plants', plantBody(String(id), 'after')))
    const acknowledged = creates.flatMap((answer, index) => answer.status === 200 ? [String(index + 3)] : [])
    t.comment(`after tampering: ${acknowledged.length} of 10 creates answered 200`)
    t.ok(creates.every(isStoreUnavailable), 'every create answers 503', { found: creates.map(({ status }) => status) })
    t.ok(isStoreUnavailable(await request('GET', '/readyz')), '/readyz answers 503')
    server.child.kill('SIGKILL')
    await exitWithin(server, 10_000)
    t.strictSame(storedSqliteIds(file), ['1', '2', ...acknowledged], 'after kill -9, the path holds every plant acknowledged')
  })
}

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  served(signal)
  t.test(`a database moved in over the open one, then ${signal}: the path keeps the new database whole`, async (t) => {
    const { file, server, request } = await served(signal)
    const replacement = join(dirname(file), 'replacement.db')
    const db = new Database(replacement)
    db.exec('CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT')
    db.transaction(() => { for (let id = 1; id <= 2001; id++) db.prepare('INSERT INTO plants (id, name) VALUES (?, ?)').run(id, 'moved in') })()
    db.close()
    renameSync(replacement, file)

    t.ok(isStoreUnavailable(await request('POST', '/plants', plantBody('3', 'after'))), 'a create answers 503: the service knows')
    server.child.kill(signal)
    await exitWithin(server, 10_000)
    const ids = storedSqliteIds(file)
    t.equal(ids.length, 2001, 'opening the path shows the 2,001 plants moved in, not the 2 of the old database')
    const check = new Database(file)
    t.strictSame(check.pragma('integrity_check'), [{ integrity_check: 'ok' }], 'integrity_check ok')
    check.close()
  })
}
