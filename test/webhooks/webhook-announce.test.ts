import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { openStore } from '../../plugins/store/index.js'
import type { OutboxStore, WebhookOutbox } from '../../plugins/store/outbox.js'
import { ANNOUNCE_GAP_MS, channelOf, listen, RELISTEN_MS } from '../../plugins/store/postgres/announce.js'
import { MIN_POOL_TO_LISTEN } from '../../plugins/store/postgres/outbox.js'
import type { PostgresStoreOptions } from '../../plugins/store/postgres/store.js'
import pg from 'pg'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { AUTH, build, createPlant, JSON_TYPE } from '../helpers/app.js'
import { downFor, freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const pgSkip = await postgresSkip()
const ENDPOINTS = [{ name: 'e0', events: ['plant.created' as const] }]

/** A PostgreSQL store of its own on `url`, its outbox open; closed at the test's end. */
async function outboxOn (t: Test, url: string, options: PostgresStoreOptions = {}): Promise<WebhookOutbox> {
  const store = await openStore(url, { poolSize: MIN_POOL_TO_LISTEN, ...options }) as PlantStore & OutboxStore
  t.teardown(() => store.close())
  return store.openOutbox({ endpoints: ENDPOINTS, payloads: eventPayloads })
}

/** The sessions of the database at `url` listening for announcements: the listeners' connections. */
const listeners = async (url: string) => (await sqlOn<{ pid: number }>(url,
  'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE \'LISTEN %\' AND pid <> pg_backend_pid()')).map(({ pid }) => pid)

t.test('PostgreSQL: what one store\'s outbox announces, another\'s on the same database hears, over a connection it keeps', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const [speaker, hearer] = [await outboxOn(t, url), await outboxOn(t, url)]
  let heard = 0
  const stop = hearer.listen!(() => { heard++ })
  t.ok(await eventually(() => heard === 1), 'heard once as it starts listening: what was announced before it listened is looked for')
  t.equal((await listeners(url)).length, 1, 'one session listens')

  speaker.announce!()
  t.ok(await eventually(() => heard === 2), 'an announcement is heard')

  // A burst: the first at once, one more at the end of the gap for the rest; never one per commit.
  for (let i = 0; i < 50; i++) speaker.announce!()
  t.ok(await eventually(() => heard === 4), 'a burst of 50 is heard twice: at once, and for the rest at the end of the gap')
  await sleep(20 * ANNOUNCE_GAP_MS)
  t.equal(heard, 4, 'and no more')

  // The server ends the listening session (a restart, a failover, an administrator): it listens again.
  const [pid] = await listeners(url)
  await sqlOn(url, 'SELECT pg_terminate_backend($1)', [pid])
  t.ok(await eventually(async () => (await listeners(url)).some((other) => other !== pid), 10_000 + RELISTEN_MS[0]), 'a new session listens')
  t.ok(await eventually(() => heard === 5), 'heard once as it listens again')
  await sleep(2 * ANNOUNCE_GAP_MS)
  speaker.announce!()
  t.ok(await eventually(() => heard === 6), 'and hears the next announcement')

  await stop()
  t.ok(await eventually(async () => (await listeners(url)).length === 0), 'stopped: its session is closed')
  speaker.announce!()
  await sleep(200)
  t.equal(heard, 6, 'and nothing more is heard')
})

t.test('PostgreSQL: a listener whose store is down keeps trying, and listens once it is back', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const [speaker, hearer] = [await outboxOn(t, url), await outboxOn(t, url)]
  let heard = 0
  hearer.listen!(() => { heard++ })
  t.ok(await eventually(() => heard === 1), 'listening')
  // Connections refused for a while: every session of the database ended, new ones turned away.
  const up = await downFor(url)
  // What is announced meanwhile is lost, and no failure reaches the caller: the listener's poll finds those events.
  speaker.announce!()
  await sleep(RELISTEN_MS[0] + RELISTEN_MS[1])
  t.equal(heard, 1, 'nothing heard while refused')
  // Another listener, stopped while it waits to try again, stops at once.
  const other = hearer.listen!(() => { t.fail('never listens') })
  await sleep(RELISTEN_MS[0] / 2)
  await other()
  await up()
  t.ok(await eventually(() => heard === 2, 20_000), 'it listens again once connections are let in')
  speaker.announce!()
  t.ok(await eventually(() => heard === 3), 'and hears')
  // Left listening: the store's close stops it, rather than wait for its connection forever.
})

t.test('PostgreSQL: a store whose schema is set and one that takes the default agree on the channel; a pool too small to spare a connection does not listen', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  // The schema named, or left to the search_path (or not known yet, the server down at the start).
  const [speaker, hearer] = [await outboxOn(t, url, { schema: 'public' }), await outboxOn(t, url)]
  let heard = 0
  hearer.listen!(() => { heard++ })
  t.ok(await eventually(() => heard === 1), 'listening')
  speaker.announce!()
  t.ok(await eventually(() => heard === 2), 'heard')
  const small = await outboxOn(t, url, { poolSize: MIN_POOL_TO_LISTEN - 1 })
  t.equal(small.listen, undefined, `with ${MIN_POOL_TO_LISTEN - 1} connections, none is held to listen: its delivery relies on its poll`)
  t.type(small.announce, 'function', 'it still announces')
})

/** Every client session of the database at `url` but the asker's. */
const sessions = async (url: string) => (await sqlOn<{ pid: number }>(url,
  'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = \'client backend\' AND pid <> pg_backend_pid()')).map(({ pid }) => pid)

t.test('PostgreSQL: a listening session that stops answering (the link silent, nothing closed) is replaced', { skip: pgSkip }, async (t) => {
  const direct = await freshDatabase(t)
  const url = new URL(direct)
  const proxy = await startTcpProxy(t, url.hostname, Number(url.port || 5432))
  url.host = `127.0.0.1:${proxy.port}`
  const pool = new pg.Pool({ connectionString: url.href, max: 3, connectionTimeoutMillis: 2000 })
  pool.on('error', () => {})
  let heard = 0
  const stop = listen(() => pool.connect(), channelOf('plants'), () => { heard++ }, { checkMs: 100, answerMs: 300 })
  t.teardown(async () => {
    await stop()
    await pool.end()
  })
  t.ok(await eventually(() => heard === 1), 'listening')
  const [pid] = await sessions(direct)
  await sleep(500)
  t.equal(heard, 1, 'a session that answers its checks (every 100 ms here) is kept')
  t.same(await sessions(direct), [pid], 'the same one')
  proxy.freeze()
  await sleep(1000)
  proxy.thaw()
  t.ok(await eventually(() => heard === 2, 10_000), 'listens again once its check went unanswered')
  t.ok(await eventually(async () => { const pids = await sessions(direct); return pids.length === 1 && pids[0] !== pid }), 'on a new session: the silent one was closed')
})

// The delivering instance looks for due deliveries once a second when nothing wakes it. Woken by
// the API-only instance's announcements, an event leaves well within that second; were it left to
// the poll, each wait would be spread over the second, and all but one of ROUNDS under BOUND_MS
// has a chance of 8 x 0.4^7 x 0.6 + 0.4^8 = 0.85 %. One round may be slow on a loaded machine.
const ROUNDS = 8
const BOUND_MS = 400
const fast = (waits: number[]) => waits.filter((wait) => wait < BOUND_MS).length >= ROUNDS - 1

for (const delivery of ['thread', 'in-process'] as const) {
  t.test(`PostgreSQL: an API-only instance (delivery off) wakes a delivering one (${delivery}): creates and redeliveries leave at once, not at its next poll`, { skip: pgSkip }, async (t) => {
    const url = await freshDatabase(t)
    const receiver = await startReceiver(t)
    const endpoints = [{ url: receiver.url, secret: newSecret() }]
    const { app: api } = await build(t, { store: url, webhooks: webhooksFor(endpoints, { delivery: 'off' }) })
    await build(t, { store: url, webhooks: webhooksFor(endpoints, { delivery }) })
    // Its first claim (at its start) is made and the listener is in place.
    t.ok(await eventually(async () => (await listeners(url)).length === 1, 60_000), 'the delivering instance listens')
    const waits: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const before = Date.now()
      t.equal((await createPlant(api, `{"id":${round + 1},"name":"fern"}`)).statusCode, 200)
      t.ok(await eventually(() => receiver.received.length === round + 1), 'delivered')
      waits.push(receiver.received[round].at - before)
    }
    t.ok(fast(waits), `creates: all but one within ${BOUND_MS} ms: ${waits.join(', ')} ms`)

    const redeliveries: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(100)
      const before = Date.now()
      const response = await api.inject({ method: 'POST', url: '/webhooks/events/1/redeliver', headers: { ...AUTH, ...JSON_TYPE }, payload: '{}' })
      t.equal(response.statusCode, 202)
      t.ok(await eventually(() => receiver.received.length === ROUNDS + round + 1), 'sent again')
      redeliveries.push(receiver.received[ROUNDS + round].at - before)
    }
    t.ok(fast(redeliveries), `redeliveries on the API-only instance: all but one within ${BOUND_MS} ms: ${redeliveries.join(', ')} ms`)
  })
}
