/**
 * PostgreSQL with the delivery thread (the default): the thread opens its own small pool on the
 * same database and delivers what the API thread's creates committed.
 */
import t from 'tap'
import { build, createPlant } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, verifyDelivery, webhooksFor } from '../helpers/webhooks.js'

// A thread starts through the TypeScript loader here: seconds on a busy machine.
const THREAD_START_MS = 60_000

t.test('PostgreSQL, delivery thread: each create delivered once, signed, its body the plant', { skip: await postgresSkip() }, async (t) => {
  const receiver = await startReceiver(t)
  const secret = newSecret()
  const { app } = await build(t, { store: await freshDatabase(t), webhooks: webhooksFor([{ url: receiver.url, secret }]) })
  for (let id = 1; id <= 3; id++) t.equal((await createPlant(app, `{"id":${id},"name":"a"}`)).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length >= 3, THREAD_START_MS), 'three deliveries')
  t.same(receiver.received.map(({ body }) => /"id":(\d+)/.exec(body)?.[1]).sort(), ['1', '2', '3'], 'one for each plant')
  for (const { headers, body } of receiver.received) verifyDelivery(secret, headers, body)
})
