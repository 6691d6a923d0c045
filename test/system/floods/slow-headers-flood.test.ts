/**
 * Slowloris against a real server process: flood sockets that send a request line and then one
 * header line now and then, never finishing their headers, and reconnect when closed. A request
 * whose headers are not all there yet is owed nothing: at the connection limit such a connection
 * makes room for a new client, so fresh requests are answered and a keep-alive client with a
 * token keeps its connections.
 */
import t from 'tap'
import { socketFlood } from '../../../bench/socket-flood.js'
import { assertServed, attack, freshAnswered, keepAliveClient } from '../../helpers/flood.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-slow-headers-flood'
// Scaled down from the report (400 sockets against MAX_CONNECTIONS=200): five times the limit.
const MAX_CONNECTIONS = 40
const FLOOD = 5 * MAX_CONNECTIONS
const DRIP_INTERVAL = 1000
const RECONNECT_PAUSE = 50
const FRESH = 40
const ANSWER_TIMEOUT = 10_000
const CLIENT_CONNECTIONS = 4
const CLIENT_DURATION = 4000

t.test(`${FLOOD} slowloris sockets against MAX_CONNECTIONS=${MAX_CONNECTIONS}: fresh requests are answered, a keep-alive client keeps working`, async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN, MAX_CONNECTIONS: String(MAX_CONNECTIONS) })
  const port = Number(new URL(server.url).port)
  // The client's connections are open and answered before the flood begins, as a running client's are.
  const warm = await keepAliveClient(server.url, TOKEN, CLIENT_CONNECTIONS, 200, ANSWER_TIMEOUT)
  t.equal(warm.failed, 0, 'without the flood the client\'s requests succeed')
  const flood = attack(t, socketFlood, [port, FLOOD, RECONNECT_PAUSE, { drip: DRIP_INTERVAL }])
  // As many connections as the flood has sockets: every slot has been taken.
  await flood.counted(FLOOD, 30_000)

  const [fresh, client] = await Promise.all([
    freshAnswered(server.url, TOKEN, FRESH, 4, ANSWER_TIMEOUT),
    keepAliveClient(server.url, TOKEN, CLIENT_CONNECTIONS, CLIENT_DURATION, ANSWER_TIMEOUT)
  ])
  flood.stop()
  await assertServed(t, server, { fresh, sent: FRESH, client, duration: CLIENT_DURATION })
})
