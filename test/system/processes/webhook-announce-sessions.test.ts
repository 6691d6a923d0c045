/**
 * PostgreSQL announcements (plugins/store/postgres/announce.ts) against a server's and a link's real
 * timing: a listener whose database refuses connections for a while keeps trying on its own
 * schedule, and a listening session that goes silent is replaced after its check goes unanswered.
 * Both wait out real time (the waits between tries, the checks' period): here, not in the fast tiers.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import pg from 'pg'
import { channelOf, listen, RELISTEN_MS } from '../../../plugins/store/postgres/announce.js'
import { downFor, freshDatabase, postgresSkip, sqlOn } from '../../helpers/postgres.js'
import { startTcpProxy } from '../../helpers/tcp-proxy.js'
import { eventually, outboxOn } from '../../helpers/webhooks.js'

const pgSkip = await postgresSkip()

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
