import { join } from 'node:path'
import t from 'tap'
import { createMemoryStore } from '../stores/memory.js'
import { openPostgresStore } from '../stores/postgres.js'
import { openSqliteStore } from '../stores/sqlite.js'
import { outboxContract } from './helpers/outbox-contract.js'
import { freshDatabase, postgresSkip } from './helpers/postgres.js'

const pgSkip = await postgresSkip()

t.test('memory', async (t) => {
  outboxContract((name, run) => t.test(name, run), async () => createMemoryStore())
})

t.test('SQLite', async (t) => {
  let n = 0
  const dir = t.testdir({})
  outboxContract((name, run) => t.test(name, run), async () => openSqliteStore(join(dir, `outbox-${n++}.db`)))
})

t.test('PostgreSQL', { skip: pgSkip }, async (t) => {
  outboxContract((name, run) => t.test(name, run), async () => openPostgresStore(await freshDatabase(t)))
})
