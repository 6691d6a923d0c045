/**
 * The delivery thread's default limits hold: a thread that fills its heap (512 MB by default)
 * ends alone, and the process, its API and its deliveries go on. Before, the thread's heap was the
 * process's own (4 GB here): a thread that filled it aborted the whole process, API and all.
 * Filling the default heap takes its time on a busy machine: here, not in the webhooks tier.
 */
import { join } from 'node:path'
import t from 'tap'
import { assertSurvivesOutOfMemory } from '../../helpers/webhook-out-of-memory.js'

t.test('SQLite file, the default limits: a delivery thread out of memory ends alone; the API answers on, nothing acknowledged is lost', async (t) => {
  await assertSurvivesOutOfMemory(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})
