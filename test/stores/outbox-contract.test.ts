import { join } from 'node:path'
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { outboxContract } from '../helpers/outbox-contract.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()

t.test('memory', async (t) => {
  outboxContract({ test: (name, run) => t.test(name, run), open: async () => createMemoryStore() })
})

t.test('SQLite', async (t) => {
  let files = 0
  const newFile = () => join(t.testdir(), `outbox-${++files}.db`)
  outboxContract({
    test: (name, run) => t.test(name, run),
    open: async () => openSqliteStore(newFile()),
    storage: async () => {
      const file = newFile()
      return async () => openSqliteStore(file)
    }
  })
})

t.test('PostgreSQL', { skip: pgSkip }, async (t) => {
  outboxContract({
    test: (name, run) => t.test(name, run),
    open: async () => openPostgresStore(await freshDatabase(t)),
    storage: async () => {
      const url = await freshDatabase(t)
      return async () => openPostgresStore(url)
    }
  })
})
