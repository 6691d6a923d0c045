/**
 * A flood of well-behaved clients without a token, against a real server process on PostgreSQL:
 * each flood socket asks GET /readyz (public) again the moment its answer comes, so its request is
 * nearly always being handled (waiting for a pooled connection to ping the store) and the progress
 * rule never finds it idle or stalling. Such connections may hold only their share of the slots
 * (TOKENLESS_CONNECTION_SHARE): a keep-alive client with a token keeps its connections, and fresh
 * requests with a token find a slot.
 */
import t from 'tap'
import { socketFlood } from '../../../bench/socket-flood.js'
import { assertServed, attack, freshAnswered, keepAliveClient } from '../../helpers/flood.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-tokenless-share-flood'
// Scaled down from MAX_CONNECTIONS=200 against 400 sockets: ten times the limit.
const MAX_CONNECTIONS = 40
const FLOOD = 10 * MAX_CONNECTIONS
const RECONNECT_PAUSE = 20
const FRESH = 40
const ANSWER_TIMEOUT = 10_000
const CLIENT_CONNECTIONS = 4
const CLIENT_DURATION = 4000

t.test(`${FLOOD} tokenless sockets busy with GET /readyz against MAX_CONNECTIONS=${MAX_CONNECTIONS}: fresh requests with a token are answered, a keep-alive client keeps working`, {
  skip: await postgresSkip()
}, async (t) => {
  const server = await startServer(t, {
    API_TOKENS: TOKEN, MAX_CONNECTIONS: String(MAX_CONNECTIONS), DATABASE_URL: await freshDatabase(t)
  })
  const port = Number(new URL(server.url).port)
  // The client's connections are open and answered before the flood begins, as a running client's are.
  const warm = await keepAliveClient(server.url, TOKEN, CLIENT_CONNECTIONS, 200, ANSWER_TIMEOUT)
  t.equal(warm.failed, 0, 'without the flood the client\'s requests succeed')
  const flood = attack(t, socketFlood, [port, FLOOD, RECONNECT_PAUSE, { path: '/readyz' }])
  // The flood has had each of its sockets answered twice over: every slot has been busy.
  await flood.counted(2 * FLOOD, 30_000)

  // On a route that requires the token: one that verifies makes its connection a known client's.
  const [fresh, client] = await Promise.all([
    freshAnswered(server.url, TOKEN, FRESH, 4, ANSWER_TIMEOUT, '/plants/1', 404),
    keepAliveClient(server.url, TOKEN, CLIENT_CONNECTIONS, CLIENT_DURATION, ANSWER_TIMEOUT)
  ])
  flood.stop()
  await assertServed(t, server, { fresh, sent: FRESH, client, duration: CLIENT_DURATION })
})
