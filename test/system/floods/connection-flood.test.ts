/**
 * A flood of connections against a real server process started with few file descriptors
 * (`ulimit -n`): more connections than it has descriptors, held open, some silent and some idle
 * after a keep-alive request. The service must keep answering a new client and never exit.
 */
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { send } from '../../helpers/load.js'
import { assertStopsCleanly, exitWithin, linesOf, spawnServer, startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-connection-flood'
const FD_LIMIT = 256
// Well past the descriptors the server has.
const FLOOD = 3 * FD_LIMIT

interface Flood { sockets: Socket[], closedByServer: () => number }

/** Opens `count` connections one after another; odd ones send a keep-alive request, even ones nothing. */
async function flood (url: string, count: number): Promise<Flood> {
  const { hostname, port } = new URL(url)
  const sockets: Socket[] = []
  let closed = 0
  for (let index = 0; index < count; index++) {
    const socket = connect(Number(port), hostname)
    socket.on('error', () => {})
    // Read (and drop) what comes, so that a close by the server is seen.
    socket.resume()
    socket.once('close', () => { closed++ })
    sockets.push(socket)
    await new Promise((resolve) => {
      socket.once('connect', resolve)
      socket.once('close', resolve)
    })
    if (index % 2 === 1 && !socket.destroyed) socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`)
  }
  return { sockets, closedByServer: () => closed }
}

t.test(`${FLOOD} connections against ${FD_LIMIT} file descriptors: a new client is still answered, and the process lives`, async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN }, { fdLimit: FD_LIMIT })
  const attack = await flood(server.url, FLOOD)
  t.teardown(() => { for (const socket of attack.sockets) socket.destroy() })
  // The samplers (memory, event loop) run every second: let them run twice with the flood held.
  await sleep(2500)
  t.comment(`the server let go of ${attack.closedByServer()} of the ${FLOOD} connections`)
  t.ok(server.child.exitCode === null && server.child.signalCode === null, 'the process is still running')

  const health = await send(server.url, TOKEN, 'GET', '/healthz')
  t.equal(health.status, 200, 'GET /healthz on a new connection is 200')
  const created = await send(server.url, TOKEN, 'POST', '/plants', '{"id":1,"name":"flood survivor"}')
  t.equal(created.status, 200, 'POST /plants on a new connection is 200')
  t.same(JSON.parse(created.text), { name: 'flood survivor' })

  t.same(server.logs().filter((line) => line.level >= 50).map((line) => line.msg), [], 'nothing logged at error or above')
  server.child.kill('SIGTERM')
  assertStopsCleanly(t, server, await exitWithin(server, 15_000), 'SIGTERM still stops it cleanly: exit 0')
})

t.test('MAX_CONNECTIONS beyond what the file descriptor limit allows is refused at start, with one line', async (t) => {
  const server = spawnServer(t, { API_TOKENS: TOKEN, MAX_CONNECTIONS: String(FD_LIMIT) }, { fdLimit: FD_LIMIT })
  const { code, signal } = await exitWithin(server, 30_000)
  t.ok(code !== null && code !== 0 && signal === null, `exits non-zero (code ${code}, signal ${signal})`)
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, `exactly one line on stderr:\n${server.stderr()}`)
  t.match(lines[0] ?? '', /^Invalid configuration: MAX_CONNECTIONS .*\b256\b/, 'names MAX_CONNECTIONS and the limit')
})
