import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { AUTH, build, createPlant, JSON_TYPE, type App } from '../helpers/app.js'
import { startReceiver } from '../helpers/receiver.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'
import { parseExactJson } from '../../schemas/exact-json.js'

// The admin routes' bodies hold only the keys their schema names: any other key is refused, never
// dropped, so a misspelt request does not act on more than it says.

const post = async (app: App, url: string, payload?: string) => {
  const reply = await app.inject({ method: 'POST', url, headers: { ...AUTH, ...(payload !== undefined && JSON_TYPE) }, ...(payload !== undefined && { payload }) })
  return { status: reply.statusCode, body: JSON.parse(reply.body) }
}
const get = async (app: App, url: string) => parseExactJson((await app.inject({ method: 'GET', url, headers: AUTH })).body) as any

// Independent subtests, each its own app and receiver: together.
t.jobs = 2

t.test('POST /webhooks/events/{seq}/redeliver refuses an unknown key with 400 and queues nothing', async (t) => {
  const receiver = await startReceiver(t)
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]) })
  t.equal((await createPlant(app, '{"id":1,"name":"fern"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1), 'delivered once')
  // Its result is written a moment after the receiver answered (sooner on a quiet machine).
  let seq: bigint | undefined
  for (let tries = 0; tries < 500 && seq === undefined; tries++) {
    const [event] = await get(app, '/webhooks/events')
    if (event.deliveries[0].state === 'delivered') seq = event.seq
    else await sleep(10)
  }
  for (const payload of ['{"x":1}', '{"endpoint":"e0","x":1}', '{"endpoints":"e0"}']) {
    t.strictSame(await post(app, `/webhooks/events/${seq}/redeliver`, payload), {
      status: 400, body: { error: 400, message: `body has an unknown property "${Object.keys(JSON.parse(payload)).at(-1)!}"` }
    }, `${payload}: 400 in the Error shape, naming the key`)
  }
  t.match((await get(app, `/webhooks/events/${seq}`)).deliveries, [{ endpoint: 'e0', state: 'delivered', attempts: 1, history: [{ outcome: 'success' }] }],
    'the delivery is untouched: nothing queued again')
  t.strictSame(await post(app, `/webhooks/events/${seq}/redeliver`, '{"endpoint":"e0"}'), { status: 202, body: { redelivered: 1 } }, 'a known key still works')
  t.ok(await eventually(() => receiver.received.length === 2), 'and resends once')
})

t.test('POST /webhooks/endpoints/{name}/enable refuses any key with 400 and leaves the endpoint disabled', async (t) => {
  let gone = true
  const receiver = await startReceiver(t, (response) => { response.statusCode = gone ? 410 : 200; response.end() })
  const { app } = await build(t, { webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]) })
  t.equal((await createPlant(app, '{"id":1,"name":"fern"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1), 'one attempt, answered 410')
  let endpoints: any
  // The 410 is recorded a moment after the receiver answered it.
  for (let tries = 0; tries < 500; tries++) {
    endpoints = await get(app, '/webhooks/endpoints')
    if (endpoints[0].enabled === false) break
    await sleep(10)
  }
  t.match(endpoints, [{ name: 'e0', enabled: false }], 'disabled by the 410')
  gone = false
  t.strictSame(await post(app, '/webhooks/endpoints/e0/enable', '{"x":1}'), {
    status: 400, body: { error: 400, message: 'body has an unknown property "x"' }
  })
  t.strictSame(await post(app, '/webhooks/endpoints/e0/enable', '[]'), { status: 400, body: { error: 400, message: 'body must be object' } })
  t.match(await get(app, '/webhooks/endpoints'), [{ name: 'e0', enabled: false }], 'still disabled')
  t.equal(receiver.received.length, 1, 'nothing sent')
  t.match(await post(app, '/webhooks/endpoints/e0/enable', '{}'), { status: 200, body: { name: 'e0', enabled: true } }, 'an empty object enables it')
  t.match(await post(app, '/webhooks/endpoints/e0/enable'), { status: 200, body: { name: 'e0', enabled: true } }, 'so does no body at all')
  t.ok(await eventually(() => receiver.received.length === 2), 'the queued event is sent')
})
