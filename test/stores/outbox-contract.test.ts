import { join } from 'node:path'
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'
import { feedContract } from '../helpers/feed-contract.js'
import { outboxContract, type OutboxContractOptions } from '../helpers/outbox-contract.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()

/** The outbox's contract, and the change feed's on the same stores. */
function contracts (setup: OutboxContractOptions) {
  outboxContract(setup)
  feedContract(setup)
}

t.test('memory', async (t) => {
  contracts({ test: (name, run) => t.test(name, run), open: async () => createMemoryStore() })
})

t.test('SQLite', async (t) => {
  let files = 0
  const newFile = () => join(t.testdir(), `outbox-${++files}.db`)
  contracts({
    test: (name, run) => t.test(name, run),
    open: async () => openSqliteStore(newFile()),
    storage: async () => {
      const file = newFile()
      return async () => openSqliteStore(file)
    }
  })
})

t.test('PostgreSQL', { skip: pgSkip }, async (t) => {
  contracts({
    test: (name, run) => t.test(name, run),
    open: async () => openPostgresStore(await freshDatabase(t)),
    storage: async () => {
      const url = await freshDatabase(t)
      return async () => openPostgresStore(url)
    }
  })
})
