/**
 * Each delivery carries its event's place in the change feed (webhook-cursor): a receiver that was
 * down resumes from the feed right after the last delivery it got. On each store.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { AUTH, build, createPlant, JSON_TYPE } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

interface Page { changes: Array<{ cursor: string, event: { id: number, type: string } }>, next: string }

const STORES: Array<[string, (t: Test) => Promise<string> | string, string | false]> = [
  ['memory', () => 'memory:', false],
  ['SQLite', (t) => `sqlite:${t.testdir()}/plants.db`, false],
  ['PostgreSQL', (t) => freshDatabase(t), await postgresSkip()]
]

/**
 * A page of GET /plants/changes once it holds `count` changes: on PostgreSQL the feed reads only
 * below the oldest transaction running on the server, which another test's may hold back a moment.
 */
async function pageOf (app: Awaited<ReturnType<typeof build>>['app'], url: string, count: number): Promise<Page> {
  for (let tries = 0; ; tries++) {
    const page = (await app.inject({ url, headers: AUTH })).json<Page>()
    if (page.changes.length >= count || tries === 500) return page
    await sleep(20)
  }
}

for (const [name, storeOf, skip] of STORES) {
  // Delivered on the app's event loop: the cursor is the store's, whichever side sends it.
  t.test(`${name}: each delivery's webhook-cursor is its event's cursor in GET /plants/changes, and after it come the events after it`, { skip }, async (t) => {
    const receiver = await startReceiver(t)
    const { app } = await build(t, { store: await storeOf(t), webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }], { timeout: 30_000, delivery: 'in-process' }) })
    t.equal((await createPlant(app, '{"id":9007199254740993,"name":"Agave"}')).statusCode, 200)
    t.ok(await eventually(() => receiver.received.length === 1), 'delivered')
    // Created while the receiver was away: not delivered to it yet, found in the feed after its cursor.
    t.equal((await app.inject({ method: 'PUT', url: '/plants/9007199254740993', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"name":"Agave","tag":"blue"}' })).statusCode, 200)
    await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: AUTH })
    const cursor = receiver.received[0].headers['webhook-cursor']
    const all = await pageOf(app, '/plants/changes', 3)
    t.equal(cursor, all.changes[0].cursor, 'the delivered event\'s cursor')
    const after = await pageOf(app, `/plants/changes?after=${String(cursor)}`, 2)
    t.same(after.changes.map(({ event }) => event.type), ['plant.updated', 'plant.deleted'], 'what came after it')
  })
}

t.test('with the feed off, the webhooks deliver as before and GET /plants/changes is 404', async (t) => {
  const receiver = await startReceiver(t)
  const { app } = await build(t, { feed: false, webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }], { timeout: 30_000 }) })
  t.equal((await createPlant(app, '{"id":1,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1), 'delivered')
  t.equal((await app.inject({ url: '/plants/changes', headers: AUTH })).statusCode, 404)
})
