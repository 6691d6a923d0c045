/**
 * An operator moves the live SQLite file (a rename away, or a rename and a copy back to the path,
 * as copying a database is often done). Plants acknowledged before must end up in a file the
 * operator can find, named in the log, and the README's restore steps must bring them back.
 * Real files, real server processes, real signals.
 */
import { copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { isStoreUnavailable, listedIds, plantBody, send } from '../../helpers/load.js'
import { exitWithin, startServer, type ServerProcess } from '../../helpers/server-process.js'
import { storedSqliteIds } from '../../helpers/sqlite-ids.js'

const TOKEN = 'sqlite-moved-file-token'
const ACKNOWLEDGED = ['1', '2', '3', '4', '5']

/** A server on `folder`/plants.db holding plants 1 to 5, all still in its -wal (never checkpointed). */
async function serve (t: Test, folder: string) {
  mkdirSync(folder)
  const file = join(folder, 'plants.db')
  const env = { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN }
  const server = await startServer(t, env)
  for (const id of ACKNOWLEDGED) t.equal((await send(server.url, TOKEN, 'POST', '/plants', plantBody(id, 'before'))).status, 200, `create ${id}`)
  return { file, env, server }
}

/** After the move: a create is refused and the server stops cleanly on SIGTERM. */
async function refusedThenStopped (t: Test, server: ServerProcess) {
  t.ok(isStoreUnavailable(await send(server.url, TOKEN, 'POST', '/plants', plantBody('6', 'after'))), 'a create after the move answers 503')
  t.ok(isStoreUnavailable(await send(server.url, TOKEN, 'GET', '/readyz')), '/readyz answers 503')
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 10_000), { code: 0, signal: null }, 'the server stops cleanly')
}

const root = t.testdir()

t.test('moved away and copied back: the moved file holds every acknowledged plant, and the log names it', async (t) => {
  const { file, server } = await serve(t, join(root, 'copied'))
  renameSync(file, `${file}.bak`)
  copyFileSync(`${file}.bak`, file)
  await refusedThenStopped(t, server)
  t.strictSame(storedSqliteIds(`${file}.bak`), ACKNOWLEDGED, 'plants.db.bak, the file the service had open, holds all 5')
  t.ok(server.logs().some((line) => line.level >= 40 && String(line.msg).includes(`${file}.bak`)),
    'a warning names plants.db.bak', { logs: server.logs().filter(({ level }) => level >= 40) })
  t.same(storedSqliteIds(file), [], 'the copy at the path is left as it was copied (its plants were only in the -wal)')
})

t.test('renamed away, restarted as the README says, then restored as it says: every acknowledged plant is back', async (t) => {
  const { file, env, server } = await serve(t, join(root, 'renamed'))
  renameSync(file, `${file}.bak`)
  await refusedThenStopped(t, server)
  t.strictSame(storedSqliteIds(`${file}.bak`), ACKNOWLEDGED, 'plants.db.bak holds all 5 once the service has stopped')

  // The restart the README advises: a new, empty database at the path.
  const restarted = await startServer(t, env)
  t.strictSame(listedIds((await send(restarted.url, TOKEN, 'GET', '/plants')).text), [], 'the restarted service has a new, empty database')
  restarted.child.kill('SIGTERM')
  await exitWithin(restarted, 10_000)
  t.strictSame(storedSqliteIds(`${file}.bak`), ACKNOWLEDGED, 'the restart left plants.db.bak whole')

  // The README's restore: with the service stopped, move the file back, with no -wal or -shm of another.
  renameSync(`${file}.bak`, file)
  t.notOk(existsSync(`${file}-wal`), 'no -wal is left at the path to be laid over the restored file')
  const restored = await startServer(t, env)
  t.strictSame(listedIds((await send(restored.url, TOKEN, 'GET', '/plants')).text), ACKNOWLEDGED, 'after the restore, all 5 are served')
})
