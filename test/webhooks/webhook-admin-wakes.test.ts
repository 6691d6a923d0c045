import t, { type Test } from 'tap'
import { AUTH, build, createPlant, JSON_TYPE, type App } from '../helpers/app.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

// The worker looks for due deliveries once a second when nothing wakes it. What an admin route
// makes due wakes it: its sends leave well within that second. Were they left to the poll, each
// wait would be spread over the second, and all but one of ROUNDS under BOUND_MS has a chance of
// 8 x 0.4^7 x 0.6 + 0.4^8 = 0.85 %. One round may be slow: a loaded machine stalls a loop now and then.
const ROUNDS = 8
const BOUND_MS = 400
const fast = (waits: number[]) => waits.filter((wait) => wait < BOUND_MS).length >= ROUNDS - 1

const post = (app: App, url: string) => app.inject({ method: 'POST', url, headers: { ...AUTH, ...JSON_TYPE }, payload: '{}' })
const endpointState = async (app: App) => (await app.inject({ url: '/webhooks/endpoints', headers: AUTH })).json()[0]
const eventState = async (app: App, seq: number) => (await app.inject({ url: `/webhooks/events/${seq}`, headers: AUTH })).json().deliveries[0].state

// The delivery on this event loop (the memory store) and in its own thread (a SQLite file).
const STORES = { memory: () => 'memory:', 'delivery thread': (t: Test) => `sqlite:${t.testdir({})}/plants.db` }

t.jobs = 4

for (const [where, store] of Object.entries(STORES)) {
  t.test(`a redelivery by hand leaves at once, not at the next poll (${where})`, async (t) => {
    const receiver = await startReceiver(t, (response) => { response.statusCode = 500; response.end() })
    const { app } = await build(t, { store: store(t), webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }], { retrySchedule: [50] }) })
    t.equal((await createPlant(app, '{"id":1,"name":"a"}')).statusCode, 200)
    const waits: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      t.ok(await eventually(() => receiver.received.length === 2 + round), 'the attempts so far')
      t.ok(await eventually(async () => await eventState(app, 1) === 'failed'), 'a dead letter')
      const before = Date.now()
      t.equal((await post(app, '/webhooks/events/1/redeliver')).statusCode, 202)
      t.ok(await eventually(() => receiver.received.length === 3 + round), 'sent again')
      waits.push(receiver.received[2 + round].at - before)
    }
    t.ok(fast(waits), `all but one within ${BOUND_MS} ms: ${waits.join(', ')} ms`)
  })

  t.test(`an endpoint enabled again gets its pending deliveries at once, not at the next poll (${where})`, async (t) => {
    let gone = true
    const receiver = await startReceiver(t, (response) => { response.statusCode = gone ? 410 : 200; response.end() })
    const { app } = await build(t, { store: store(t), webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]) })
    const waits: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      gone = true
      const received = receiver.received.length
      t.equal((await createPlant(app, `{"id":${2 * round + 1},"name":"gone"}`)).statusCode, 200)
      t.ok(await eventually(async () => !(await endpointState(app)).enabled), 'disabled by a 410')
      gone = false
      t.equal((await createPlant(app, `{"id":${2 * round + 2},"name":"kept"}`)).statusCode, 200)
      const before = Date.now()
      t.equal((await post(app, '/webhooks/endpoints/e0/enable')).statusCode, 200)
      t.ok(await eventually(() => receiver.received.length === received + 3), 'the two pending sent')
      waits.push(receiver.received[received + 1].at - before)
    }
    t.ok(fast(waits), `all but one within ${BOUND_MS} ms: ${waits.join(', ')} ms`)
  })
}
