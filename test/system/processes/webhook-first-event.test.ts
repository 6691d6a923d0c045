/**
 * The first event after a start leaves as fast as later ones: the service listens only once its
 * delivery thread is up (store and outbox open, doorbell listened to). Before, the thread started
 * after ready(), and the first event arrived 0.4-1.5 s after its create, later ones in 10-48 ms.
 * The bundle, as production runs it: the TypeScript loader would make a thread's start slow anyway.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { plantBody, send } from '../../helpers/load.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { startServer } from '../../helpers/server-process.js'
import { median } from '../../helpers/time.js'
import { slowReceiver, TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, verifyDelivery } from '../../helpers/webhooks.js'

const BUNDLE = fileURLToPath(new URL('../../../dist/server.mjs', import.meta.url))
const LATER = 9
const THREAD_UP = 'webhooks: delivering in a thread of its own'

async function assertFirstEventFast (t: Test, databaseUrl: string) {
  const receiver = await slowReceiver(t, 0)
  const server = await startServer(t, webhookEnv(databaseUrl, receiver.url, receiver.secret), { args: [BUNDLE] })
  const messages = server.logs().map(({ msg }) => msg)
  t.ok(messages.includes(THREAD_UP), 'the delivery thread was up before the server listened')
  t.notOk(messages.some((msg) => String(msg).includes('is not up after')), 'within the bound: no warning')
  const latencies: number[] = []
  for (let id = 1; id <= 1 + LATER; id++) {
    const created = Date.now()
    t.equal((await send(server.url, TOKEN, 'POST', '/plants', plantBody(String(id), 'fern'))).status, 200)
    t.ok(await eventually(() => receiver.received.length === id, 10_000), `event ${id} delivered`)
    latencies.push(receiver.received[id - 1].at - created)
  }
  for (const { headers, body } of receiver.received) verifyDelivery(receiver.secret, headers, body)
  const [first, ...later] = latencies
  // Within the later ones' spread, with room for a busy machine: 0.4 s and more before.
  const bound = Math.max(3 * median(later), Math.max(...later) + 100, 200)
  t.ok(first <= bound, `the first event in ${first} ms, the next ${LATER} in ${later.join(', ')} ms (median ${median(later)}); at most ${bound}`)
}

t.test('SQLite: the first event after start is delivered as fast as the next ones', async (t) => {
  await assertFirstEventFast(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})

t.test('PostgreSQL: the same', { skip: await postgresSkip() }, async (t) => {
  await assertFirstEventFast(t, await freshDatabase(t))
})
