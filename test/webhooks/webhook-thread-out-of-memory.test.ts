/**
 * A delivery thread that runs out of memory for real ends alone: the app keeps answering creates
 * 200 meanwhile, the thread is started again, named ERR_WORKER_OUT_OF_MEMORY in the log and counted
 * in /metrics, and every event acknowledged before, during and after is delivered, signed. Here
 * with a small heap limit, filled in seconds; test/system/processes/ fills the default one.
 */
import { join } from 'node:path'
import t from 'tap'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { assertSurvivesOutOfMemory } from '../helpers/webhook-out-of-memory.js'

// Small enough to fill in seconds, large enough for the real thread from source under coverage: at
// 32 MB it too ran out, on busy cores, with some 600 events to deliver when it came up.
const LIMITS = { maxOldGenerationSizeMb: 64 }

// Independent subtests, each its own store, receiver and thread: together.
t.jobs = 2

t.test('SQLite file: a delivery thread out of memory is started again; the API answers on, nothing acknowledged is lost', async (t) => {
  await assertSurvivesOutOfMemory(t, `sqlite:${join(t.testdir({}), 'plants.db')}`, LIMITS)
})

t.test('PostgreSQL: the same', { skip: await postgresSkip() }, async (t) => {
  await assertSurvivesOutOfMemory(t, await freshDatabase(t), LIMITS)
})
