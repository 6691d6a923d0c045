/**
 * A database moved while another connection reads an older snapshot: its log cannot be copied
 * whole into the moved file, so it goes beside it, and the moved file opens with every plant.
 */
import { existsSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'

t.test('moved while a reader holds an older snapshot: the -wal goes beside the moved file, which holds every plant', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'plants.db')
  const warnings: string[] = []
  const store = openSqliteStore(file, { log: { warn: (message) => warnings.push(message), info () {} } })
  await store.create({ id: 1n, name: 'before the snapshot' })
  const reader = new Database(file)
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM plants').get()
  await store.create({ id: 2n, name: 'after the snapshot' })

  const moved = join(dir, 'moved.db')
  renameSync(file, moved)
  await t.rejects(store.create({ id: 3n, name: 'refused' }), StoreUnavailableError, 'a create after the move is 503')
  t.ok(existsSync(`${moved}-wal`), 'the log lies beside the moved file')
  t.match(warnings, [new RegExp(`every plant acknowledged is in ${moved}$`)], 'the warning names the moved file')
  reader.exec('COMMIT')
  reader.close()
  await store.close()

  const check = new Database(moved)
  t.teardown(() => check.close())
  t.strictSame(check.prepare('SELECT id FROM plants ORDER BY id').pluck().all(), [1, 2], 'the moved file, with its log, holds both plants')
})
