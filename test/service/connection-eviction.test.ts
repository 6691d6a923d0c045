/**
 * Making room at the connection limit never hurts a well-behaved client: a flood of
 * idle connections that reconnect as soon as they are closed, beside an ordinary keep-alive client
 * whose pooled connections are idle between its requests.
 */
import { Agent, request } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import t from 'tap'
import { build, TOKEN } from '../helpers/app.js'
import { pool } from '../helpers/load.js'

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
