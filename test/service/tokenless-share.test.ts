/**
 * Connections without a verified token hold at most their share of the slots (service/edge/connections.ts),
 * over real sockets: beyond it, a new connection closes a stranger's that may go; when none may,
 * a tokenless request on the new one is answered 503 at once, and a request with a token is served.
 */
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { SILENT_GRACE } from '../../service/edge/connection-table.js'
import { listening, TOKEN } from '../helpers/app.js'
import { acceptedBy, answers, client, closesSoon, receivedWhen, turns } from '../helpers/exchange.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { eventually } from '../helpers/webhooks.js'

const READYZ = 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n'

/** A memory store whose pings wait until `release`: GET /readyz stays in flight, as on a busy database. */
function slowPingStore () {
  let pings = 0
  let release = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  const store = { ...createMemoryStore(), ping: async () => { pings++; await released } }
  return { store, pings: () => pings, release }
}

const MAX_TOKENLESS = 2

t.test('beyond their share, strangers that may go make room; when none may, a tokenless request is refused 503 and one with a token served', async (t) => {
  const slow = slowPingStore()
  const clock = fakeClock()
  const { app, port } = await listening(t, { store: slow.store }, { maxConnections: 10, maxTokenless: MAX_TOKENLESS, clock })
  const accepted = acceptedBy(app.server)
  // The store's own probe at start-up, not a request's.
  const atStart = slow.pings()
  const pings = () => slow.pings() - atStart
  const busy = await client(port)
  busy.socket.write(READYZ)
  const silent = await client(port)
  t.ok(await eventually(() => pings() === 1 && accepted.length === 2), 'the busy stranger is being answered, the silent one accepted')
  await turns()
  // Past the time a connection that has sent nothing is spared.
  await clock.advance(SILENT_GRACE)
  const third = await client(port)
  t.ok(await closesSoon(silent), 'the third stranger closed the silent one, not the busy one')
  third.socket.write(READYZ)
  t.ok(await eventually(() => pings() === 2), 'within the share, both busy strangers are being answered')

  const overShare = await client(port)
  overShare.socket.write(READYZ)
  t.ok(await closesSoon(overShare), 'over the share, with every stranger busy: answered and closed')
  const refusal = overShare.received()
  t.match(refusal, /^HTTP\/1\.1 503 [^]*\{"error":503,"message":"Too many connections without a token, send one or try again later"\}$/, 'in the Error shape')
  t.match(refusal, /\r\nretry-after: 1\r\n/i)
  t.match(refusal, /\r\nconnection: close\r\n/i)
  t.equal(pings(), 2, 'nothing was handled for it')

  const liveness = await client(port)
  liveness.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  await liveness.closed
  t.match(liveness.received(), /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/, 'over the share too, the liveness probe is answered: a flood must not get the process restarted')

  const withToken = await client(port)
  withToken.socket.write(`GET /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`)
  const served = await receivedWhen(withToken, (text) => /\r\n\r\n\{[^]*\}$/.test(text))
  t.match(served, /^HTTP\/1\.1 404 [^]*keep-alive/i, 'over the share too, a request with a token is served and its connection kept')
  withToken.socket.write(READYZ)
  t.ok(await eventually(() => pings() === 3), 'once known, its connection is no stranger: its tokenless requests are handled')

  // A verified token makes its connection known before the body is validated: also when it is then refused.
  const refusedBody = await client(port)
  const invalid = '{"id":"one"}'
  refusedBody.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${invalid.length}\r\n\r\n${invalid}`)
  const refusal400 = await receivedWhen(refusedBody, (text) => answers(text).length > 0)
  t.match(refusal400, /^HTTP\/1\.1 400 [^]*keep-alive/i, 'an invalid body with a token: 400, the connection kept')
  refusedBody.socket.write(READYZ)
  t.ok(await eventually(() => pings() === 4), 'its connection is known all the same: its tokenless request is handled')

  slow.release()
  busy.socket.end()
  third.socket.end()
  withToken.socket.end()
  refusedBody.socket.end()
  await Promise.all([busy.closed, third.closed, withToken.closed, refusedBody.closed])
  t.match(busy.received(), /^HTTP\/1\.1 200 /, 'the busy strangers are answered')
  t.match(third.received(), /^HTTP\/1\.1 200 /)
  t.same(answers(refusedBody.received()), [400, 200], 'and so is the one on the connection made known')
})
