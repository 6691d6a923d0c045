/**
 * Making room at the connection limit never hurts a well-behaved client: a flood of
 * idle connections that reconnect as soon as they are closed, beside an ordinary keep-alive client
 * whose pooled connections are idle between its requests.
 */
import { Agent, request } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { SILENT_GRACE } from '../../service/edge/connection-table.js'
import { build, TOKEN } from '../helpers/app.js'
import { acceptedBy, turns } from '../helpers/exchange.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { pool } from '../helpers/load.js'
import { eventually } from '../helpers/webhooks.js'

const MAX_CONNECTIONS = 20
// Twice the limit, as in the report (MAX_CONNECTIONS=200 against 400).
const IDLE_FLOOD = 2 * MAX_CONNECTIONS
const CLIENT_CONNECTIONS = 8
const REQUESTS = 2000

/** Idle connections that say nothing and reconnect whenever the server closes one. */
function idleFlood (port: number, count: number) {
  let stopped = false
  const sockets = new Set<Socket>()
  const open = () => {
    if (stopped) return
    const socket = connect(port, '127.0.0.1')
    sockets.add(socket)
    socket.on('error', () => {})
    socket.resume()
    socket.once('close', () => {
      sockets.delete(socket)
      setImmediate(open)
    })
  }
  for (let index = 0; index < count; index++) open()
  return () => {
    stopped = true
    for (const socket of sockets) socket.destroy()
  }
}

/** GET /plants/1 with the token on the agent's pooled connections; resolves with the error code, if any. */
function get (port: number, agent: Agent): Promise<string | undefined> {
  return new Promise((resolve) => {
    const sent = request({ port, host: '127.0.0.1', path: '/plants/1', agent, headers: { authorization: `Bearer ${TOKEN}` } }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode === 404 ? undefined : `status ${response.statusCode}`))
      response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    })
    sent.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    sent.end()
  })
}

t.test(`${IDLE_FLOOD} reconnecting idle sockets against MAX_CONNECTIONS=${MAX_CONNECTIONS}: a keep-alive client that authenticated is never evicted`, async (t) => {
  const { app } = await build(t, {}, { maxConnections: MAX_CONNECTIONS })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENT_CONNECTIONS })
  t.teardown(() => agent.destroy())
  // The client's connections are open and have been answered before the flood begins.
  await pool(CLIENT_CONNECTIONS, CLIENT_CONNECTIONS, async () => { await get(port, agent) })
  const stop = idleFlood(port, IDLE_FLOOD)
  t.teardown(stop)

  const failures = new Map<string, number>()
  await pool(REQUESTS, CLIENT_CONNECTIONS, async () => {
    const failure = await get(port, agent)
    if (failure !== undefined) failures.set(failure, (failures.get(failure) ?? 0) + 1)
  })
  const failed = [...failures.values()].reduce((sum, count) => sum + count, 0)
  t.comment(`${failed} of ${REQUESTS} requests failed (${(100 * failed / REQUESTS).toFixed(2)} %): ${JSON.stringify(Object.fromEntries(failures))}`)
  t.ok(failed / REQUESTS < 0.001, 'fewer than 0.1 % of the client\'s requests fail')
})

/**
 * A server at `limit` connections, all for strangers (none has a token), on a fake clock, and a way
 * to open raw sockets to it, each optionally sending a first chunk: their indexes, in the order the
 * server closed them. `allRead` waits until the server has accepted and read all those opened;
 * `graceOver` moves the clock past the time a silent new connection is spared.
 */
async function atTheLimit (t: Test, limit: number) {
  const clock = fakeClock()
  const { app } = await build(t, {}, { maxConnections: limit, maxTokenless: limit, clock })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const accepted = acceptedBy(app.server)
  const sent: number[] = []
  const opened: Socket[] = []
  const closed: number[] = []
  t.teardown(() => { for (const socket of opened) socket.destroy() })
  const open = async (first?: string) => {
    const index = opened.length
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {}).on('close', () => closed.push(index)).resume()
    opened.push(socket)
    await new Promise((resolve) => socket.once('connect', resolve))
    sent.push(first?.length ?? 0)
    if (first !== undefined) socket.write(first)
  }
  const allRead = async () => {
    await eventually(() => accepted.length === opened.length && sent.every((bytes, index) => accepted[index]!.bytesRead === bytes))
    await turns()
  }
  const graceOver = () => clock.advance(SILENT_GRACE)
  const closedAtLeast = async (count: number) => {
    await eventually(() => closed.length >= count, 10_000)
    return closed
  }
  return { open, allRead, graceOver, closedAtLeast }
}

t.test('a flood of more idle strangers than one scan looks at: room is made by closing the oldest of them', async (t) => {
  const limit = 100
  const { open, allRead, graceOver, closedAtLeast } = await atTheLimit(t, limit)
  for (let index = 0; index < limit; index++) await open()
  await allRead()
  await graceOver()
  for (let index = 0; index < 10; index++) await open()
  const closed = [...await closedAtLeast(10)].sort((a, b) => a - b)
  t.ok(closed.length >= 10, `room was made for the ten (${closed.length} closed)`)
  t.same(closed, closed.map((_, index) => index), `the oldest went: ${closed.join(', ')}`)
  t.notOk(closed.some((index) => index >= limit), 'none of the ten new ones was closed')
})

t.test('past the limit, a stranger stalled in its headers is closed before older idle ones', async (t) => {
  const limit = 20
  const { open, allRead, graceOver, closedAtLeast } = await atTheLimit(t, limit)
  for (let index = 0; index < limit - 1; index++) await open(index === 10 ? 'GET /plants/1 HTTP/1.1\r\nHost: x\r\n' : undefined)
  await allRead()
  await graceOver()
  await open()
  await open()
  t.equal((await closedAtLeast(1))[0], 10, 'the stalled one was closed first, though ten idle ones are older')
})
