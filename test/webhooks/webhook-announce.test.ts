import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import pg from 'pg'
import { ANNOUNCE_GAP_MS, channelOf, RELISTEN_MS } from '../../plugins/store/postgres/announce.js'
import { MIN_POOL_TO_LISTEN } from '../../plugins/store/postgres/outbox.js'
import { AUTH, build, createPlant, JSON_TYPE } from '../helpers/app.js'
import { connect, freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, outboxOn, webhooksFor } from '../helpers/webhooks.js'

const pgSkip = await postgresSkip()

/** The sessions of the database at `url` listening for announcements: the listeners' connections. */
const listeners = async (url: string) => (await sqlOn<{ pid: number }>(url,
  'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE \'LISTEN %\' AND pid <> pg_backend_pid()')).map(({ pid }) => pid)

// The channel of an outbox on the default plants table, and one of the witness's own for its marks.
const CHANNEL = channelOf('plants')
const MARKS = 'plant_store_test_marks'

/**
 * A session of the test's own on the database at `url`, listening on the outbox's channel beside
 * the listeners under test: what it is told comes in the order the database committed it, whatever
 * the channel. A mark it sends itself (on a channel no listener under test hears) comes after every
 * announcement committed before it: what no longer happens is shown without waiting for it.
 */
async function witnessOn (t: Test, url: string) {
  const client = await connect(url)
  t.teardown(() => client.end())
  const told: string[] = []
  client.on('notification', ({ channel }) => told.push(channel === MARKS ? 'mark' : 'announced'))
  await client.query(`LISTEN ${pg.escapeIdentifier(CHANNEL)}; LISTEN ${MARKS}`)
  // It no longer shows as a listener: its session's last statement is another.
  await client.query('SELECT 1')
  let seen = 0
  /** The announcements told since the last call (or the start), up to a mark sent now. */
  const announcedSince = async () => {
    await client.query(`NOTIFY ${MARKS}`)
    const from = seen
    await eventually(() => told.indexOf('mark', from) >= 0)
    seen = told.indexOf('mark', from) + 1
    return seen - 1 - from
  }
  return { announcedSince }
}

t.test('PostgreSQL: what one store\'s outbox announces, another\'s on the same database hears, over a connection it keeps', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const [speaker, hearer] = [await outboxOn(t, url), await outboxOn(t, url)]
  const witness = await witnessOn(t, url)
  let heard = 0
  const stop = hearer.listen!(() => { heard++ })
  t.ok(await eventually(() => heard === 1), 'heard once as it starts listening: what was announced before it listened is looked for')
  t.equal((await listeners(url)).length, 1, 'one session listens')

  speaker.announce!()
  t.ok(await eventually(() => heard === 2), 'an announcement is heard')
  t.equal(await witness.announcedSince(), 1, 'one NOTIFY')

  // A burst: the first at once, one more at the end of the gap for the rest; never one per commit.
  for (let i = 0; i < 50; i++) speaker.announce!()
  t.ok(await eventually(() => heard === 4), 'a burst of 50 is heard twice: at once, and for the rest at the end of the gap')
  // The gap after the second over, a mark: whatever the burst still announced comes before it.
  await sleep(2 * ANNOUNCE_GAP_MS)
  t.equal(await witness.announcedSince(), 2, 'and no more: two NOTIFYs for the 50')
  t.equal(heard, 4, 'heard twice')

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
  await sleep(2 * ANNOUNCE_GAP_MS)
  speaker.announce!()
  // Told to the witness, as to every session listening then.
  t.ok(await eventually(async () => await witness.announcedSince() > 0), 'announced once more')
  t.equal(heard, 6, 'and nothing more is heard')
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
    const firstDelivery = async () => (await api.inject({ url: '/webhooks/events/1', headers: AUTH })).json().deliveries[0]
    for (let round = 0; round < ROUNDS; round++) {
      // The last attempt's result written first: each redelivery finds the delivering instance done.
      t.ok(await eventually(async () => {
        const { state, history } = await firstDelivery()
        return state === 'delivered' && history.length === round + 1
      }), 'the attempt before recorded')
      const before = Date.now()
      const response = await api.inject({ method: 'POST', url: '/webhooks/events/1/redeliver', headers: { ...AUTH, ...JSON_TYPE }, payload: '{}' })
      t.equal(response.statusCode, 202)
      t.ok(await eventually(() => receiver.received.length === ROUNDS + round + 1), 'sent again')
      redeliveries.push(receiver.received[ROUNDS + round].at - before)
    }
    t.ok(fast(redeliveries), `redeliveries on the API-only instance: all but one within ${BOUND_MS} ms: ${redeliveries.join(', ')} ms`)
  })
}
