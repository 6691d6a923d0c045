import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'
import { assertSplitRolesSurviveSigkill, slowReceiver, TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { plantBody } from '../../helpers/load.js'
import { eventually } from '../../helpers/webhooks.js'

const pgSkip = await postgresSkip()

t.test('WEBHOOK_DELIVERY=off writes events and delivers none; a delivery-only instance (API=off) delivers them and serves no plant route', async (t) => {
  const receiver = await slowReceiver(t, 0)
  const env = webhookEnv(`sqlite:${join(t.testdir({}), 'plants.db')}`, receiver.url, receiver.secret)
  const api = await startServer(t, { ...env, WEBHOOK_DELIVERY: 'off' })
  for (let id = 1; id <= 5; id++) {
    const response = await fetch(`${api.url}/plants`, {
      method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody(String(id), 'fern')
    })
    t.equal(response.status, 200, `create ${id} answered`)
  }
  await sleep(1500)
  t.equal(receiver.received.length, 0, 'the API-only instance delivers nothing')
  const events = await (await fetch(`${api.url}/webhooks/events`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as unknown[]
  t.equal(events.length, 5, 'its admin routes list the 5 events, pending')
  const delivery = await startServer(t, { ...env, API: 'off', API_TOKENS: undefined })
  // Its delivery thread starts through the TypeScript loader: slow on a busy machine.
  t.ok(await eventually(() => receiver.received.length === 5, 60_000), 'the delivery-only instance delivers them')
  t.equal((await fetch(`${delivery.url}/healthz`)).status, 200, 'it answers /healthz')
  t.equal((await fetch(`${delivery.url}/readyz`)).status, 200, 'and /readyz')
  t.equal((await fetch(`${delivery.url}/plants`, { method: 'POST', body: '{}' })).status, 404, 'but no plant route')
  // The thread reports its attempts to /metrics in batches (every 50 ms): the count may trail the receiver.
  const counted = /plant_store_webhook_attempts_total\{endpoint="default",outcome="success"\} 5\b/
  let metrics = ''
  for (const end = Date.now() + 10_000; !counted.test(metrics) && Date.now() < end; await sleep(50)) {
    metrics = await (await fetch(`${delivery.url}/metrics`)).text()
  }
  t.match(metrics, counted, 'its /metrics counts its attempts')
  for (const server of [api, delivery]) server.child.kill('SIGTERM')
  for (const server of [api, delivery]) t.same(await exitWithin(server, 15_000), { code: 0, signal: null }, 'stops cleanly')
})

t.test('SQLite: an API process and a delivery-only process on one file, each kill -9\'d 3 times: no acknowledged create without its event', async (t) => {
  await assertSplitRolesSurviveSigkill(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})

t.test('PostgreSQL: an API process and a delivery-only process, each kill -9\'d 3 times: no acknowledged create without its event', { skip: pgSkip }, async (t) => {
  await assertSplitRolesSurviveSigkill(t, await freshDatabase(t))
})
