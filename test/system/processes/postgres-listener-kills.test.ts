/**
 * The session a delivering instance holds to LISTEN for other instances' commits, ended by the
 * server 15 times in a row (pg_terminate_backend, each new session as soon as it shows, as fast as
 * the kills can be issued): the listener keeps coming back, and within a bound after the last
 * kill; meanwhile its poll delivers what was created. Real time: the waits between reconnects are
 * the subject.
 */
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import pg from 'pg'
import { channelOf, listen, notifySql } from '../../../plugins/store/postgres/announce.js'
import { build, createPlant } from '../../helpers/app.js'
import { connect, freshDatabase, postgresSkip, sqlOn } from '../../helpers/postgres.js'
import { startReceiver } from '../../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../../helpers/webhooks.js'

const KILLS = 15
// The bound after the last kill: the longest wait between two tries (1 s), and a connect and a LISTEN on a loaded machine.
const BACK_WITHIN_MS = 3000
// Woken by an announcement, an event leaves well within the poll's second (as in webhook-announce.test.ts).
const ROUNDS = 8
const WOKEN_MS = 400

/** The listening sessions of the database at `url` (the LISTEN running or done). */
const listening = async (url: string) => (await sqlOn<{ pid: number }>(url, `SELECT pid FROM pg_stat_activity
  WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`)).map(({ pid }) => pid)

t.test(`PostgreSQL: the listening session killed ${KILLS} times in a row: listening again within ${BACK_WITHIN_MS} ms, the poll delivering meanwhile`,
  { skip: await postgresSkip() }, async (t) => {
    const url = await freshDatabase(t)
    const receiver = await startReceiver(t)
    const endpoints = [{ url: receiver.url, secret: newSecret() }]
    const { app: api } = await build(t, { store: url, webhooks: webhooksFor(endpoints, { delivery: 'off' }) })
    await build(t, { store: url, webhooks: webhooksFor(endpoints, { delivery: 'in-process' }) })
    t.ok(await eventually(async () => (await listening(url)).length === 1, 60_000), 'the delivering instance listens')

    // The killer, on a connection to another database, so that it never kills itself.
    const killer = await connect(new URL('/postgres', url).href)
    t.teardown(() => killer.end())
    const database = new URL(url).pathname.slice(1)
    const killed = new Set<number>()
    const gaps: number[] = []
    let created = 0
    let last = performance.now()
    while (killed.size < KILLS) {
      const { rows } = await killer.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'
        AND NOT (pid = ANY($2::int4[]))`, [database, [...killed]])
      if (rows.length === 0) {
        await sleep(1)
        continue
      }
      for (const { pid } of rows) {
        await killer.query('SELECT pg_terminate_backend($1)', [pid])
        killed.add(pid)
      }
      gaps.push(Math.round(performance.now() - last))
      last = performance.now()
      // A create between kills: its announcement may be lost, the poll finds it.
      t.equal((await createPlant(api, `{"id":${++created},"name":"during"}`)).statusCode, 200)
    }
    t.comment(`${KILLS} kills; the listener was back after ${gaps.slice(1).join(', ')} ms`)

    const storm = performance.now()
    t.ok(await eventually(async () => (await listening(url)).some((pid) => !killed.has(pid)), BACK_WITHIN_MS),
      `listening again within ${BACK_WITHIN_MS} ms of the last kill`)
    t.comment(`back after ${Math.round(performance.now() - storm)} ms`)
    t.ok(await eventually(() => receiver.received.length >= created, 30_000), `the poll delivered the ${created} plants created during the storm`)

    const waits: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const before = Date.now()
      t.equal((await createPlant(api, `{"id":${++created},"name":"after"}`)).statusCode, 200)
      t.ok(await eventually(() => receiver.received.length >= created), 'delivered')
      waits.push(receiver.received[created - 1].at - before)
    }
    t.ok(waits.filter((wait) => wait < WOKEN_MS).length >= ROUNDS - 1, `woken by announcements again: all but one within ${WOKEN_MS} ms: ${waits.join(', ')} ms`)
  })

t.test(`PostgreSQL: each new listening session killed as it connects, ${KILLS} times in a row: listening again within ${BACK_WITHIN_MS} ms of the last kill`,
  { skip: await postgresSkip() }, async (t) => {
    const url = await freshDatabase(t)
    // As the store's own pool (connection.ts): each client heard from its connect on, or a kill as it is handed over crashes the process.
    const pool = new pg.Pool({ connectionString: url, max: 3 })
    pool.on('error', () => {})
    pool.on('connect', (client) => client.on('error', () => {}))
    const killer = await connect(url)
    t.teardown(() => killer.end())
    // Each session the listener opens is ended before its LISTEN, until KILLS are.
    const kills: number[] = []
    const connectThenKill = async () => {
      const client = await pool.connect()
      if (kills.length < KILLS) {
        await killer.query('SELECT pg_terminate_backend($1)', [(client as unknown as { processID: number }).processID])
        kills.push(performance.now())
      }
      return client
    }
    let heard = 0
    let heardAt = 0
    const channel = channelOf('plants')
    const stop = listen(connectThenKill, channel, () => {
      heard++
      heardAt = performance.now()
    })
    t.teardown(async () => {
      await stop()
      await pool.end()
    })
    t.ok(await eventually(() => kills.length === KILLS, 120_000), `${KILLS} sessions killed as they connected`)
    t.comment(`the tries came after ${kills.slice(1).map((at, i) => Math.round(at - kills[i])).join(', ')} ms`)
    t.ok(await eventually(() => heard === 1, BACK_WITHIN_MS), `listening within ${BACK_WITHIN_MS} ms of the last kill`)
    t.comment(`listening ${Math.round(heardAt - kills[KILLS - 1])} ms after the last kill`)
    await sqlOn(url, notifySql(channel))
    t.ok(await eventually(() => heard === 2, 5000), 'and an announced commit wakes it')
  })
