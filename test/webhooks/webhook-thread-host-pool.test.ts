/**
 * A host's own pg.Pool as the store, on real PostgreSQL. With `delivery: 'thread'` the delivery
 * thread runs on a pool of its own made from the host pool's settings; settings that cannot be
 * copied into a thread are refused at registration, with what to set instead. Unset, delivery
 * stays on the event loop (the thread's pool would be connections the host did not plan for), and
 * the log says so. Before, 'thread' with a pool ran on the event loop with no word said.
 */
import Fastify from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import plantStore from '../../src/plugin.js'
import { collectLogs, createPlant, TOKEN } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, verifyDelivery, webhooksFor } from '../helpers/webhooks.js'
import type { WebhooksOptions } from '../../plugins/webhooks/options-schema.js'

// A thread starts through the TypeScript loader here: seconds on a busy machine.
const THREAD_START_MS = 60_000
const THREAD_UP = 'webhooks: delivering in a thread of its own'

const skip = await postgresSkip()

/** A host's pool on a fresh database, made from `config` and that database's URL; ended at the test's end, after the app. */
async function hostPool (t: Test, config: (url: URL) => pg.PoolConfig) {
  const pool = new pg.Pool(config(new URL(await freshDatabase(t))))
  pool.on('error', () => {})
  t.teardown(() => pool.end())
  return pool
}

/** The app on `pool`, delivering as `delivery` says (unset: the default): its log, receiver and secret. */
async function appOn (t: Test, pool: pg.Pool, delivery?: WebhooksOptions['delivery']) {
  const receiver = await startReceiver(t)
  const secret = newSecret()
  const { lines, logger } = collectLogs('info')
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  await app.register(plantStore, { tokens: [TOKEN], store: pool, webhooks: webhooksFor([{ url: receiver.url, secret }], delivery && { delivery }) })
  await app.ready()
  return { app, lines, receiver, secret }
}

/** Creates plants `from`..`to`, and checks that every plant so far was delivered once, signed. */
async function assertDelivered (t: Test, { app, receiver, secret }: Awaited<ReturnType<typeof appOn>>, to: number, from = 1) {
  for (let id = from; id <= to; id++) t.equal((await createPlant(app as never, `{"id":${id},"name":"ivy"}`)).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length >= to, THREAD_START_MS), `${to} deliveries`)
  t.same(receiver.received.map(({ body }) => Number(/"id":(\d+)/.exec(body)![1])).sort((a, b) => a - b), Array.from({ length: to }, (_, index) => index + 1), 'one for each plant')
  for (const { headers, body } of receiver.received) verifyDelivery(secret, headers, body)
}

t.test('delivery \'thread\' with a host\'s pg.Pool: delivered from the thread, on a pool of its own made from the pool\'s settings, which outlives its sessions\' end', { skip }, async (t) => {
  // Discrete settings, no URL: the thread reaches the database only if it was given them, the
  // password too (which pg-pool hides from enumeration; the test server trusts, and ignores it).
  const pool = await hostPool(t, (url) => ({
    host: url.hostname, port: Number(url.port), user: url.username, password: 'unused', database: url.pathname.slice(1), application_name: 'plant-host', max: 2
  }))
  const built = await appOn(t, pool, 'thread')
  t.match(built.lines.find(({ msg }) => msg === THREAD_UP), { threadId: Number }, 'the thread says it delivers')
  t.not(built.lines.find(({ msg }) => msg === THREAD_UP)!.threadId, 0, 'from a thread, not the main one')
  await assertDelivered(t, built, 3)
  // Sessions named as the host pool names its own: the host pool's, and the thread's, whose pool copied the name.
  const named = async () => Number((await pool.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'plant-host'")).rows[0].n)
  t.ok(await eventually(async () => await named() > pool.totalCount, 10_000), 'the thread\'s sessions beside the host pool\'s: with its application_name, copied')
  // Every other session of the database ended, the thread's idle and listening ones among them:
  // its pool drops them and opens others, and the thread delivers on.
  await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')
  // The host's own ended sessions are dropped first: the one that ended the others is left.
  await eventually(() => pool.totalCount <= 1, 10_000)
  await assertDelivered(t, built, 5, 4)
  await built.app.close()
  t.ok(await eventually(async () => await named() <= pool.totalCount, 10_000), 'the thread\'s pool ended with the app')
  t.same((await pool.query('SELECT count(*)::int AS n FROM plants')).rows, [{ n: 5 }], 'the host\'s pool is left open: the host ends it')
})

t.test('delivery \'thread\' with a pool whose password is a function: refused at registration, saying why and what to set; in-process, it delivers', { skip }, async (t) => {
  // The test server trusts its clients: it never asks for the password.
  const pool = await hostPool(t, (url) => ({ connectionString: url.href, password: async () => 'unused' }))
  const refused = Fastify()
  t.teardown(() => refused.close())
  const webhooks = webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }], { delivery: 'thread' })
  await t.rejects(async () => { await refused.register(plantStore, { tokens: [TOKEN], store: pool, webhooks }) }, {
    name: 'PlantStoreOptionsError',
    message: 'plant-store: option webhooks.delivery is invalid: it is \'thread\' with a pg.Pool as the store, whose password is a function, which cannot be copied ' +
      'into a thread: the delivery thread opens a pool of its own from the pool\'s settings; set webhooks.delivery to \'in-process\' (delivery on this event loop, ' +
      'on the pool itself), or give the store as a postgres:// URL'
  })
  t.equal(pool.totalCount, 0, 'refused before the store was opened: no connection made')
  const built = await appOn(t, pool, 'in-process')
  await assertDelivered(t, built, 2)
  t.notOk(built.lines.some(({ msg }) => msg === THREAD_UP), 'on this event loop')
})

t.test('a pool whose connect listener sets up its sessions: \'thread\' refused, the listener named', { skip }, async (t) => {
  const pool = await hostPool(t, (url) => ({ connectionString: url.href }))
  pool.on('connect', (client) => { client.query('SET search_path TO public').catch(() => {}) })
  const app = Fastify()
  t.teardown(() => app.close())
  const webhooks = webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }], { delivery: 'thread' })
  await t.rejects(async () => { await app.register(plantStore, { tokens: [TOKEN], store: pool, webhooks }) },
    { name: 'PlantStoreOptionsError', message: /webhooks\.delivery is invalid: it is 'thread' with a pg\.Pool as the store, whose 'connect' listeners set up its connections/ })
})

t.test('delivery unset with a pool: on the event loop, as before, and the log says so and how to move it', { skip }, async (t) => {
  const pool = await hostPool(t, (url) => ({ connectionString: url.href }))
  const built = await appOn(t, pool)
  await assertDelivered(t, built, 2)
  t.notOk(built.lines.some(({ msg }) => msg === THREAD_UP), 'no thread')
  t.match(built.lines.filter(({ msg }) => String(msg).startsWith('webhooks: delivering on this event loop')), [{
    level: 30, msg: 'webhooks: delivering on this event loop, on the host\'s pg.Pool (webhooks.delivery \'thread\' delivers in a thread, on a pool of its own made from its settings)'
  }], 'one line')
})
