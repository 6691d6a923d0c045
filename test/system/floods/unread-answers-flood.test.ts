/**
 * Pipelines never read, against a real server process: each flood socket asks three times for
 * Swagger UI's 1.7 MB bundle in one write and then reads nothing, so the answers stay queued on the
 * server's side; it reconnects when closed. A connection whose client leaves its answers unread is
 * owed nothing more: at the connection limit it makes room for a new client, so fresh requests are
 * answered, and a keep-alive client with a token that connects during the flood gets its answers.
 */
import t from 'tap'
import { assertServed, attack, freshAnswered, keepAliveClient } from '../../helpers/flood.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-unread-answers-flood'
// Scaled down from the report (400 to 600 sockets against MAX_CONNECTIONS=200).
const MAX_CONNECTIONS = 40
const FLOOD = 3 * MAX_CONNECTIONS
// Each connection the flood gets costs the service the start of three answers (~4 MB into the
// kernel's buffers): a pause keeps what a loaded 2-core machine spends on them within bounds.
const RECONNECT_PAUSE = 500
const FRESH = 40
const ANSWER_TIMEOUT = 10_000
const CLIENT_CONNECTIONS = 4
const CLIENT_DURATION = 4000
const BUNDLE = '/documentation/static/swagger-ui-bundle.js'
// The report's two answers stayed queued behind a tiny receive window, which Node cannot ask for:
// on loopback the kernel takes up to ~4 MB of a connection's answers, three bundles are more.
const PIPELINED = 3

/**
 * `count` sockets that pipeline `pipelined` requests for `path` and never read, each reconnecting
 * when closed. Prints how many connections the server began to answer. Plain JavaScript.
 */
function unreadPipelines (port: number, count: number, path: string, pipelined: number, reconnectPause: number) {
  const { connect } = require('node:net') as typeof import('node:net')
  let answered = 0
  const open = () => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    const get = `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`
    socket.once('connect', () => socket.write(get.repeat(pipelined)))
    // The first bytes of an answer, then nothing more is read.
    socket.once('data', () => {
      socket.pause()
      process.stdout.write(`${++answered}\n`)
    })
    socket.once('close', () => setTimeout(open, reconnectPause))
  }
  for (let index = 0; index < count; index++) open()
}

t.test(`${FLOOD} sockets that never read ${PIPELINED} pipelined 1.7 MB answers, against MAX_CONNECTIONS=${MAX_CONNECTIONS}: fresh requests are answered, a keep-alive client works`, async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN, MAX_CONNECTIONS: String(MAX_CONNECTIONS) })
  const port = Number(new URL(server.url).port)
  const flood = attack(t, unreadPipelines, [port, FLOOD, BUNDLE, PIPELINED, RECONNECT_PAUSE])
  // Every connection has been taken by the flood, and its answers queued.
  await flood.counted(MAX_CONNECTIONS, 30_000)

  const [fresh, client] = await Promise.all([
    freshAnswered(server.url, TOKEN, FRESH, 4, ANSWER_TIMEOUT),
    keepAliveClient(server.url, TOKEN, CLIENT_CONNECTIONS, CLIENT_DURATION, ANSWER_TIMEOUT)
  ])
  flood.stop()
  await assertServed(t, server, { fresh, sent: FRESH, client, duration: CLIENT_DURATION })
})
