import { EventEmitter, once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { exitWithin, startServer, type EnvOverrides, type ServerProcess } from './server-process.js'
import { listedIds, plantBody } from './load.js'
import { startReceiver, type Received } from './receiver.js'
import { settlesWithin } from './time.js'
import { eventually, newSecret, verifyDelivery } from './webhooks.js'

export const TOKEN = 'webhook-crash-token'
const TIMEOUT_MS = 1000
// The worker's lease for that timeout (2 x timeout + 1 s): a killed instance's claims are taken over after it.
export const LEASE_MS = 2 * TIMEOUT_MS + 1000

const idOf = ({ body }: Received) => /"id":(-?\d+)/.exec(body)![1]

/**
 * Whether every acknowledged id arrives. A backlog of thousands takes its time: this gives up only
 * once no delivery at all has arrived for a lease and 10 s (a killed instance's claims are taken
 * over after its lease), so a slow drain is told apart from events that never come.
 */
async function allDelivered (acknowledged: Set<string>, receiver: SlowReceiver): Promise<boolean> {
  const missing = new Set(acknowledged)
  for (let seen = 0; ;) {
    for (; seen < receiver.received.length; seen++) missing.delete(idOf(receiver.received[seen]))
    if (missing.size === 0) return true
    if (!await settlesWithin(receiver.nextDelivery(), LEASE_MS + 10_000)) return false
  }
}

type SlowReceiver = Awaited<ReturnType<typeof slowReceiver>>

/** A receiver that answers each delivery after 0 to `slowMs` ms, keeping the ids it was sent; `nextDelivery()` resolves at the next one. */
export async function slowReceiver (t: Test, slowMs: number) {
  const secret = newSecret()
  const arrivals = new EventEmitter()
  const receiver = await startReceiver(t, (response) => {
    arrivals.emit('delivery')
    setTimeout(() => response.end(), Math.random() * slowMs)
  })
  const ids = () => receiver.received.map(idOf)
  return { ...receiver, secret, ids, nextDelivery: () => once(arrivals, 'delivery') }
}

export function webhookEnv (databaseUrl: string, url: string, secret: string): EnvOverrides {
  return {
    DATABASE_URL: databaseUrl,
    API_TOKENS: TOKEN,
    WEBHOOK_URL: url,
    WEBHOOK_SECRET: secret,
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,500ms,1s,1s,1s,1s,1s',
    WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms`
  }
}

/**
 * Resolves once the server's delivery thread runs. It starts through the TypeScript loader here,
 * which takes seconds on a busy machine (the bundled server starts it far sooner).
 */
export async function deliveryThreadUp (server: ServerProcess): Promise<ServerProcess> {
  await server.waitForLog(({ msg }) => msg === 'webhooks: delivering in a thread of its own', 120_000)
  return server
}

/** Sends creates of fresh ids to `server` until `stop` resolves; returns the ids answered 200. */
export async function createUntil (server: ServerProcess, nextId: () => number, stop: Promise<unknown>, concurrency = 8): Promise<string[]> {
  const acknowledged: string[] = []
  const state = { stopped: false }
  stop.then(() => { state.stopped = true }, () => {})
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (!state.stopped) {
      const id = String(nextId())
      try {
        const response = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: plantBody(id, `plant ${id}`)
        })
        await response.text()
        if (response.status === 200) acknowledged.push(id)
      } catch {
        return // the server is gone
      }
    }
  }))
  return acknowledged
}

export async function storedIds (server: ServerProcess): Promise<Set<string>> {
  const ids = new Set<string>()
  let after = ''
  for (;;) {
    const response = await fetch(`${server.url}/plants?limit=1000${after}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    const page = listedIds(await response.text())
    if (page.length === 0) return ids
    for (const id of page) ids.add(id)
    after = `&after=${page.at(-1)}`
  }
}

/**
 * kill -9 at random moments during a create load, `runs` times, restarting each time, with a
 * slowed receiver: every create answered 200 has its event delivered (none lost), every delivered
 * id is stored, and each delivery verifies. Reports the duplicates.
 */
export async function assertEventsSurviveSigkill (t: Test, databaseUrl: string, runs = 5) {
  const receiver = await slowReceiver(t, 30)
  const env = webhookEnv(databaseUrl, receiver.url, receiver.secret)
  const acknowledged = new Set<string>()
  const runOf = new Map<string, number>()
  let id = 0
  for (let run = 1; run <= runs; run++) {
    // Killed while delivering, not while its thread starts.
    const server = await deliveryThreadUp(await startServer(t, env))
    const killAfter = 300 + Math.random() * 700
    const killed = sleep(killAfter).then(() => server.child.kill('SIGKILL'))
    const first = id + 1
    for (const ack of await createUntil(server, () => ++id, killed)) acknowledged.add(ack)
    for (let each = first; each <= id; each++) runOf.set(String(each), run)
    t.same(await exitWithin(server, 10_000), { code: null, signal: 'SIGKILL' }, `run ${run}: killed after ${Math.round(killAfter)} ms`)
  }
  const last = await deliveryThreadUp(await startServer(t, env))
  const delivered = () => new Set(receiver.ids())
  const allArrived = await allDelivered(acknowledged, receiver)
  const lost = [...acknowledged].filter((ack) => !delivered().has(ack))
  t.ok(allArrived, `every acknowledged create's event arrived (${acknowledged.size} acknowledged, ${lost.length} lost)`)
  const stored = await storedIds(last)
  const strays = [...delivered()].filter((sent) => !stored.has(sent))
  t.same(strays, [], 'every delivered id is a stored plant')
  const duplicates = receiver.received.length - delivered().size
  // Per run: its creates acknowledged, their events lost, and the extra deliveries of its events.
  for (let run = 1; run <= runs; run++) {
    const acked = [...acknowledged].filter((ack) => runOf.get(ack) === run)
    const sent = receiver.ids().filter((sentId) => runOf.get(sentId) === run)
    t.comment(`run ${run}: ${acked.length} acknowledged, ${acked.filter((ack) => !delivered().has(ack)).length} lost, ` +
      `${sent.length - new Set(sent).size} duplicates`)
  }
  t.comment(`${runs} kill -9 runs: ${acknowledged.size} creates acknowledged, ${stored.size} stored, ` +
    `${delivered().size} events delivered, ${lost.length} lost, ${duplicates} duplicates ` +
    `(${(100 * duplicates / Math.max(1, receiver.received.length)).toFixed(2)} %)`)
  const bad = receiver.received.filter(({ headers, body }) => {
    try { verifyDelivery(receiver.secret, headers, body); return false } catch { return true }
  })
  t.equal(bad.length, 0, 'every delivery verifies with standardwebhooks and svix')
  last.child.kill('SIGTERM')
  t.same(await exitWithin(last, 15_000), { code: 0, signal: null }, 'the last server stops cleanly')
}

/**
 * An API instance (WEBHOOK_DELIVERY=off) and a delivery-only one (API=off) on one store, each
 * kill -9'd at a random moment of each of `runs` runs of a create load: every create answered 200
 * has its event delivered, only stored plants are announced, each delivery verifies. Reports the duplicates.
 */
export async function assertSplitRolesSurviveSigkill (t: Test, databaseUrl: string, runs = 3) {
  const receiver = await slowReceiver(t, 30)
  const env = webhookEnv(databaseUrl, receiver.url, receiver.secret)
  const apiEnv = { ...env, WEBHOOK_DELIVERY: 'off' }
  const deliveryEnv = { ...env, API: 'off' }
  const acknowledged = new Set<string>()
  let id = 0
  for (let run = 1; run <= runs; run++) {
    const [api, delivery] = await Promise.all([startServer(t, apiEnv), startServer(t, deliveryEnv).then(deliveryThreadUp)])
    const [apiKill, deliveryKill] = [1000 + Math.random() * 1000, Math.random() * 500]
    const killed = sleep(apiKill).then(() => api.child.kill('SIGKILL'))
    // Killed while delivering: some time after its first delivery of this run.
    const before = receiver.received.length
    const deliveryKilled = eventually(() => receiver.received.length > before, 20_000)
      .then(() => sleep(deliveryKill)).then(() => delivery.child.kill('SIGKILL'))
    for (const ack of await createUntil(api, () => ++id, killed)) acknowledged.add(ack)
    await deliveryKilled
    t.same(await exitWithin(api, 10_000), { code: null, signal: 'SIGKILL' }, `run ${run}: the API instance killed after ${Math.round(apiKill)} ms`)
    t.same(await exitWithin(delivery, 10_000), { code: null, signal: 'SIGKILL' }, `run ${run}: the delivery instance killed ${Math.round(deliveryKill)} ms into its deliveries`)
  }
  const [api, delivery] = await Promise.all([startServer(t, apiEnv), startServer(t, deliveryEnv).then(deliveryThreadUp)])
  const delivered = () => new Set(receiver.ids())
  const allArrived = await allDelivered(acknowledged, receiver)
  const lost = [...acknowledged].filter((ack) => !delivered().has(ack))
  t.ok(allArrived, `every acknowledged create's event arrived (${acknowledged.size} acknowledged, ${lost.length} lost)`)
  const stored = await storedIds(api)
  t.same([...delivered()].filter((sent) => !stored.has(sent)), [], 'every delivered id is a stored plant')
  const duplicates = receiver.received.length - delivered().size
  t.comment(`${runs} runs, both instances kill -9'd in each: ${acknowledged.size} creates acknowledged, ${delivered().size} events delivered, ` +
    `${lost.length} lost, ${duplicates} duplicates (${(100 * duplicates / Math.max(1, receiver.received.length)).toFixed(2)} %)`)
  const bad = receiver.received.filter(({ headers, body }) => {
    try { verifyDelivery(receiver.secret, headers, body); return false } catch { return true }
  })
  t.equal(bad.length, 0, 'every delivery verifies with standardwebhooks and svix')
  for (const server of [api, delivery]) server.child.kill('SIGTERM')
  for (const [name, server] of Object.entries({ api, delivery })) {
    const exit = await exitWithin(server, 15_000)
    t.same(exit, { code: 0, signal: null }, `the ${name} instance stops cleanly`)
    if (exit.code !== 0) t.comment(server.stdout().slice(-4000), server.stderr().slice(-2000))
  }
}
