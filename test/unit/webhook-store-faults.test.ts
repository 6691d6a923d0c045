import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { systemClock } from '../../plugins/http/clock.js'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { openPostgresStore } from '../../plugins/store/postgres/store.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { DeliveryWorker } from '../../plugins/webhooks/delivery/worker.js'
import { downFor, freshDatabase, postgresSkip, SERVER_URL, sqlOn } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const pgSkip = await postgresSkip()

// Independent subtests, each on a database of its own: together.
t.jobs = 5

t.test('the database down while the worker claims, records, disables and prunes: warnings, then delivery once it is back', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  // The receiver holds its first answer, 410, until the database is down, so that neither the
  // endpoint's disabling nor the attempt's result can be written.
  let gone = true
  let answer = () => {}
  const receiver = await startReceiver(t, (response) => {
    answer = () => { response.statusCode = gone ? 410 : 204; response.end() }
    if (!gone) answer()
  })
  const config = resolveWebhooks(webhooksFor([{ url: receiver.url, secret: newSecret() }], { timeout: 1000 }))
  const outbox = await store.openOutbox({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
    payloads: eventPayloads
  })
  const warnings: string[] = []
  const fields: object[] = []
  const worker = new DeliveryWorker({
    outbox, config, log: { warn: (object, message) => { warnings.push(message); fields.push(object) } }, clock: systemClock, pollMs: 100, pruneEveryMs: 200
  })
  t.teardown(() => worker.stop(0))
  await store.create({ id: 1n, name: 'a' })
  worker.start()
  t.ok(await eventually(() => receiver.received.length === 1), 'the first attempt is under way')
  const up = await downFor(url)
  t.teardown(up)
  answer()
  const expected = [/endpoint could not be disabled/, /results could not be written/, /could not be claimed/, /could not be pruned/]
  const warned = () => expected.filter((pattern) => warnings.some((message) => pattern.test(message)))
  t.ok(await eventually(() => warned().length === expected.length, 5000), `warned: ${[...new Set(warnings)].join(' | ')}`)
  t.ok(fields.every((object) => typeof (object as { reason?: unknown }).reason === 'string' && !('err' in object)),
    'each says why in a line, without the error and its stack: a known fault, logged every poll', { found: fields[0] })
  gone = false
  await up()
  // The result was lost: the delivery is sent again once its lease (2 x 1 s + 1 s) runs out.
  t.ok(await eventually(() => receiver.received.length === 2, 8000), 'sent again after the lease')
  t.equal(receiver.received[1].headers['webhook-id'], receiver.received[0].headers['webhook-id'], 'the same event')
  let delivery = (await outbox.events({ limit: 1 }))[0].deliveries[0]
  for (let tries = 0; tries < 50 && delivery.state !== 'delivered'; tries++) {
    await sleep(50)
    delivery = (await outbox.events({ limit: 1 }))[0].deliveries[0]
  }
  t.match(delivery, { state: 'delivered', attempts: 1 }, 'its result written this time')
})

t.test('webhooks on with the database down at start: the store opens, creates are 503 with no event, then 200 with one', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const up = await downFor(url)
  t.teardown(up)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  const config = resolveWebhooks(webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }], { timeout: 1000 }))
  const committed: number[] = []
  const outbox = await store.openOutbox({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events: [...events, 'plant.deleted'] })),
    payloads: eventPayloads,
    committed: (_type, count) => committed.push(count)
  })
  await t.rejects(store.create({ id: 1n, name: 'a' }), StoreUnavailableError, 'a create while down: 503')
  await t.rejects(store.delete(1n), StoreUnavailableError, 'a delete while down: 503')
  await t.rejects(outbox.stats(), StoreUnavailableError, 'the outbox while down: 503')
  await up()
  t.same(await store.create({ id: 2n, name: 'b' }), { name: 'b' })
  t.equal(await store.delete(2n), true)
  const events = await outbox.events({ limit: 10 })
  t.same(events.map(({ type }) => type), ['plant.created', 'plant.deleted'], 'only the creates and deletes that succeeded have events')
  t.same(committed, [1, 1])
})

t.test('closing while a claim is on its way: what it claimed is handed back, not sent', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  const receiver = await startReceiver(t)
  const config = resolveWebhooks(webhooksFor([{ url: receiver.url, secret: newSecret() }]))
  const outbox = await store.openOutbox({
    endpoints: config.endpoints.map(({ name, events }) => ({ name, events })),
    payloads: eventPayloads
  })
  await store.create({ id: 1n, name: 'a' })
  const worker = new DeliveryWorker({ outbox, config, log: { warn () {} }, clock: systemClock })
  worker.start()
  // start() wakes the worker on the next turn, whose claim then waits for the database.
  await new Promise(setImmediate)
  await worker.stop(0)
  t.equal(receiver.received.length, 0, 'nothing sent')
  const [event] = await outbox.events({ limit: 1 })
  t.match(event.deliveries[0], { state: 'pending', attempts: 0 })
  t.ok(event.deliveries[0].dueAt!.getTime() <= Date.now(), 'due again at once: handed back, not left to its lease')
})

t.test('a database user that may not create the outbox tables: refused at start, naming the cause', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const role = `plant_store_nocreate_${process.pid}`
  await sqlOn(SERVER_URL, `CREATE ROLE ${role} LOGIN`)
  // Its grants live in the test's database: revoked there (if it is still there) before the role goes.
  t.teardown(async () => {
    await sqlOn(url, `DROP OWNED BY ${role}`).catch(() => {})
    await sqlOn(SERVER_URL, `DROP ROLE IF EXISTS ${role}`)
  })
  await sqlOn(url, 'CREATE TABLE plants (id int8 PRIMARY KEY, name text NOT NULL, tag text)')
  await sqlOn(url, `GRANT SELECT, INSERT, DELETE ON plants TO ${role}`)
  const roleUrl = new URL(url)
  roleUrl.username = role
  const store = await openPostgresStore(roleUrl.href)
  t.teardown(() => store.close())
  const options = { endpoints: [{ name: 'e0', events: ['plant.created' as const] }], payloads: eventPayloads }
  await t.rejects(store.openOutbox(options), /permission denied/)
  // Made by an administrator (here: the owner, opening the outbox once), the user needs no CREATE.
  const admin = await openPostgresStore(url)
  await admin.openOutbox(options)
  await admin.close()
  for (const suffix of ['events', 'deliveries', 'attempts', 'endpoints']) {
    await sqlOn(url, `GRANT SELECT, INSERT, UPDATE, DELETE ON plants_webhook_${suffix} TO ${role}`)
  }
  const outbox = await store.openOutbox(options)
  t.same(await store.create({ id: 1n, name: 'a' }), { name: 'a' }, 'then a create as that user')
  t.same((await outbox.events({ limit: 10 })).map(({ type }) => type), ['plant.created'], 'has its event')
})

t.test('a plants table name too long to name its outbox tables after: refused when webhooks are opened', { skip: pgSkip }, async (t) => {
  const store = await openPostgresStore(await freshDatabase(t), { table: 'p'.repeat(45) })
  t.teardown(() => store.close())
  await t.rejects(store.openOutbox({ endpoints: [], payloads: eventPayloads }),
    /table name may have at most 44 bytes/)
})
