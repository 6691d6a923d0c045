import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { exitWithin, startServer, type ServerProcess } from '../../helpers/server-process.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { createUntil, deliveryThreadUp, LEASE_MS, slowReceiver, storedIds, TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { plantBody } from '../../helpers/load.js'
import { eventually } from '../../helpers/webhooks.js'

const pgSkip = await postgresSkip()

/** Sends creates of ids 1..count spread over the servers, 4 in flight each; the ids answered 200. */
async function createAcross (servers: ServerProcess[], count: number): Promise<string[]> {
  let next = 1
  const acknowledged: string[] = []
  await Promise.all(servers.flatMap((server) => Array.from({ length: 4 }, async () => {
    for (let id = next++; id <= count; id = next++) {
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody(String(id), `plant ${id}`)
      })
      await response.text()
      if (response.status === 200) acknowledged.push(String(id))
    }
  })))
  return acknowledged
}

for (const instances of [2, 3]) {
  t.test(`${instances} instances on one PostgreSQL database: M creates give M events and M deliveries, each once`, { skip: pgSkip }, async (t) => {
    const url = await freshDatabase(t)
    const receiver = await slowReceiver(t, 5)
    // A timeout waits a minute before its retry: on a loaded machine the receiver here (this test's
    // own process) may take over a second to answer, and this test is about each event once, not timeouts.
    const env = { ...webhookEnv(url, receiver.url, receiver.secret), WEBHOOK_TIMEOUT: '5s' }
    const servers = await Promise.all(Array.from({ length: instances }, async () => deliveryThreadUp(await startServer(t, env))))
    const acknowledged = await createAcross(servers, 300)
    t.equal(acknowledged.length, 300, '300 creates acknowledged')
    t.ok(await eventually(() => new Set(receiver.ids()).size === 300, 15_000), 'every event delivered')
    await sleep(1500)
    const perId = new Map<string, number>()
    for (const id of receiver.ids()) perId.set(id, (perId.get(id) ?? 0) + 1)
    t.equal(receiver.received.length, 300, `exactly 300 deliveries (${receiver.received.length})`)
    t.same([...perId.values()].filter((n) => n > 1), [], 'none twice')
    const messageIds = new Set(receiver.received.map(({ headers }) => headers['webhook-id']))
    t.equal(messageIds.size, 300, '300 distinct webhook-ids')
    for (const server of servers) server.child.kill('SIGTERM')
    for (const server of servers) t.same(await exitWithin(server, 15_000), { code: 0, signal: null })
  })
}

t.test('one of three instances killed with -9 mid-run: every event still arrives within the lease and a few seconds', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const receiver = await slowReceiver(t, 200)
  const env = webhookEnv(url, receiver.url, receiver.secret)
  const servers = await Promise.all(Array.from({ length: 3 }, async () => deliveryThreadUp(await startServer(t, env))))
  let next = 0
  const killed = sleep(700).then(() => servers[0].child.kill('SIGKILL'))
  const stop = sleep(1500)
  const acknowledged = (await Promise.all(servers.map((server, index) => createUntil(server, () => ++next, index === 0 ? killed : stop, 4)))).flat()
  const killedAt = Date.now()
  t.same(await exitWithin(servers[0], 10_000), { code: null, signal: 'SIGKILL' })
  // The margin past the lease: the survivors' delivery threads share 2 loaded cores with this test's creates.
  const arrived = await eventually(() => acknowledged.every((id) => receiver.ids().includes(id)), LEASE_MS + 8000)
  t.ok(arrived, `all ${acknowledged.length} acknowledged events arrived, ${Date.now() - killedAt} ms after the kill (lease ${LEASE_MS} ms)`)
  const stored = await storedIds(servers[1])
  t.same(receiver.ids().filter((id) => !stored.has(id)), [], 'only stored plants were announced')
  t.comment(`duplicates: ${receiver.received.length - new Set(receiver.ids()).size} of ${receiver.received.length} deliveries`)
  for (const server of servers.slice(1)) server.child.kill('SIGTERM')
})
