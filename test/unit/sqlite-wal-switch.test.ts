/** The switch to WAL at open: tried again while another process opening the same new file holds the lock, then given up. */
import { SqliteError } from 'better-sqlite3'
import t from 'tap'
import { switchToWal } from '../../plugins/store/sqlite/store.js'

/** A connection whose pragma throws each of `failures` in turn, then succeeds; the pragmas run. */
function connection (failures: Error[]) {
  const run: string[] = []
  const db = {
    pragma: (source: string) => {
      run.push(source)
      const failure = failures.shift()
      if (failure !== undefined) throw failure
      return 'wal'
    }
  }
  return { db: db as unknown as Parameters<typeof switchToWal>[0], run }
}

t.test('busy twice, then switched: three tries', async (t) => {
  const { db, run } = connection([new SqliteError('database is locked', 'SQLITE_BUSY'), new SqliteError('database is locked', 'SQLITE_BUSY')])
  switchToWal(db, [0, 0, 0])
  t.same(run, ['journal_mode = WAL', 'journal_mode = WAL', 'journal_mode = WAL'])
})

t.test('busy past the last pause: the busy error is thrown', async (t) => {
  const busy = () => new SqliteError('database is locked', 'SQLITE_BUSY')
  const { db, run } = connection([busy(), busy(), busy()])
  t.throws(() => switchToWal(db, [0, 0]), { code: 'SQLITE_BUSY' })
  t.equal(run.length, 3)
})

t.test('any other failure is thrown at once', async (t) => {
  const { db, run } = connection([new SqliteError('disk I/O error', 'SQLITE_IOERR')])
  t.throws(() => switchToWal(db, [0]), { code: 'SQLITE_IOERR' })
  t.equal(run.length, 1)
})
