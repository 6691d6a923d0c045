/**
 * The events of the writes that take an ETag: plant.updated, written in the update's own commit,
 * and plant.deleted for a delete under If-Match, on each store, opt-in per endpoint; each delivery
 * verified with the standardwebhooks package (and svix, verifyDelivery).
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { AUTH, build, createPlant, JSON_TYPE } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, verifyDelivery, webhooksFor } from '../helpers/webhooks.js'

const pgSkip = await postgresSkip()
const KINDS = [
  { name: 'memory', skip: false as string | false, url: async () => 'memory:' },
  { name: 'SQLite', skip: false as string | false, url: async (t: Test) => `sqlite:${join(t.testdir(), 'plants.db')}` },
  { name: 'PostgreSQL', skip: pgSkip, url: (t: Test) => freshDatabase(t) }
]

// What is sent, not where from: the events are delivered on the app's event loop (where the
// delivery runs, and its thread, is webhook-delivery-place.test.ts's).
const DELIVERY = { timeout: 30_000, delivery: 'in-process' } as const

t.jobs = 3

for (const kind of KINDS) {
  t.test(`${kind.name}: a PUT sends plant.updated {type, timestamp, id, name, tag} where subscribed; a refused one sends none`, { skip: kind.skip }, async (t) => {
    const [updates, creates] = [await startReceiver(t), await startReceiver(t)]
    const secret = newSecret()
    const { app } = await build(t, {
      store: await kind.url(t),
      webhooks: webhooksFor([{ url: updates.url, secret, events: ['plant.updated'] }, { url: creates.url, secret }], DELIVERY)
    })
    const put = (url: string, payload: string, headers: Record<string, string> = {}) =>
      app.inject({ method: 'PUT', url, headers: { ...AUTH, ...JSON_TYPE, ...headers }, payload })
    const etag = (await createPlant(app, '{"id":9007199254740993,"name":"fern"}')).headers.etag as string
    t.equal((await put('/plants/9007199254740993', '{"name":"big fern","tag":"green \\"quoted\\""}', { 'if-match': etag })).statusCode, 200)
    t.equal((await put('/plants/9007199254740993', '{"name":"stale"}', { 'if-match': etag })).statusCode, 412)
    t.equal((await put('/plants/2', '{"name":"missing"}')).statusCode, 404)
    t.equal((await put('/plants/9007199254740993', '{"name":1}')).statusCode, 400)
    t.ok(await eventually(() => updates.received.length === 1 && creates.received.length === 1), 'one event each')
    const [{ headers, body }] = updates.received
    t.doesNotThrow(() => verifyDelivery(secret, headers, body), 'standardwebhooks and svix verify it')
    t.match(body, /^\{"type":"plant\.updated","timestamp":"[0-9T:.Z-]+","id":9007199254740993,"name":"big fern","tag":"green \\"quoted\\""\}$/,
      'the plant as stored, its id exact')
    t.match(creates.received[0].body, /"type":"plant\.created"/, 'an endpoint without plant.updated gets none')
    await app.close()
    t.equal(updates.received.length, 1, 'none for the 412, 404 or 400')
  })
}

for (const kind of KINDS) {
  t.test(`${kind.name}: a DELETE under If-Match sends plant.deleted once it deletes; one that fails its precondition sends none`, { skip: kind.skip }, async (t) => {
    const deletes = await startReceiver(t)
    const secret = newSecret()
    const { app } = await build(t, { store: await kind.url(t), webhooks: webhooksFor([{ url: deletes.url, secret, events: ['plant.deleted'] }], DELIVERY) })
    const remove = (etag: string) => app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: { ...AUTH, 'if-match': etag } })
    const etag = (await createPlant(app, '{"id":9007199254740993,"name":"fern"}')).headers.etag as string
    t.equal((await remove('"0"')).statusCode, 412, 'another ETag: kept')
    t.equal((await remove(etag)).statusCode, 204, 'its ETag: deleted')
    t.equal((await remove(etag)).statusCode, 404, 'then gone')
    t.ok(await eventually(() => deletes.received.length === 1), 'one event')
    const [{ headers, body }] = deletes.received
    t.doesNotThrow(() => verifyDelivery(secret, headers, body), 'standardwebhooks and svix verify it')
    t.match(body, /^\{"type":"plant\.deleted","timestamp":"[0-9T:.Z-]+","id":9007199254740993\}$/)
    await app.close()
    t.equal(deletes.received.length, 1, 'none for the 412 or the 404')
  })
}
