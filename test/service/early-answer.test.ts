/**
 * A request refused before its body has come is answered once, and its connection let go at once
 *: not held while the body trickles in, and never answered a second time
 * (408) when REQUEST_TIMEOUT passes, and a transfer coding other than chunked is 501, in the Error
 * shape. A body that arrives absurdly slowly is cut off early (408): test/system/processes/slow-body.test.ts.
 */
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { UNKNOWN_TRANSFER_CODING } from '../../service/edge/http-protocol.js'
import { exchange } from '../helpers/exchange.js'
import { rawRequest } from '../helpers/server-process.js'
import { listening, settingsFrom, storedPlants, TOKEN } from '../helpers/app.js'

const VALID = `Authorization: Bearer ${TOKEN}`

// The subtests are independent, and some wait on the server's timers: they run at once.
t.jobs = 8

/** Sends `head` and a first byte of body, then one byte every 300 ms; resolves the statuses answered, and when the server closed. */
async function trickle (port: number, head: string) {
  const { answer, waited } = await exchange(port, `${head}[`, 'a')
  return { statuses: [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map(([, status]) => Number(status)), answer, waited }
}

const post = (path: string, ...headers: string[]) =>
  [`POST ${path} HTTP/1.1`, 'Host: x', ...headers, 'Content-Length: 100000', '', ''].join('\r\n')

// Alone, before the others run at once: it measures how soon each refused connection is let go.
t.test('a request refused while its body trickles in gets one answer, with Connection: close, and is let go at once', { buffered: false }, async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '1000', REQUEST_TIMEOUT: '2000', BODY_MIN_RATE: '0' }))
  const cases: Array<[string, string, number]> = [
    ['no token', post('/plants', 'Content-Type: application/json'), 401],
    ['a wrong token', post('/plants', 'Authorization: Bearer wrong', 'Content-Type: application/json'), 401],
    ['a refused content type', post('/plants', VALID, 'Content-Type: text/plain'), 415],
    ['an unknown route', post('/nope', VALID, 'Content-Type: application/json'), 404]
  ]
  for (const [title, head, status] of cases) {
    const { statuses, answer, waited } = await trickle(port, head)
    t.same(statuses, [status], `${title}: ${status}, and no 408 after it`)
    t.match(answer, /\r\nconnection: close\r\n/i, `${title}: with Connection: close`)
    t.ok(waited < 1000, `${title}: closed after ${waited} ms, not at REQUEST_TIMEOUT`)
  }
  t.same(await storedPlants(store), [])
})

t.test('a refused request whose whole body came with its headers keeps its connection', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({}))
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { answer += chunk })
  const body = '{"id":1,"name":"n"}'
  socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
    'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  await once(socket, 'close')
  t.same([...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map(([, status]) => Number(status)), [401, 200], 'the next request is answered too')
})

t.test('a large body sent at full speed with a wrong token still gets its 401, not a reset connection', async (t) => {
  const { port } = await listening(t, {}, settingsFrom({}))
  const big = `{"id":1,"name":"${'a'.repeat(1_000_000)}"}`
  for (let attempt = 0; attempt < 3; attempt++) {
    const response = await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST', headers: { authorization: 'Bearer wrong', 'content-type': 'application/json' }, body: big
    })
    t.equal(response.status, 401, `attempt ${attempt + 1}: 401`)
    await response.arrayBuffer()
  }
})

t.test('a transfer coding other than chunked is 501 in the Error shape, nothing stored', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({}))
  const url = `http://127.0.0.1:${port}`
  const body = '{"id":1,"name":"coded"}'
  const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
  const send = (...codings: string[]) => rawRequest(url, [
    'POST /plants HTTP/1.1', 'Host: x', VALID, 'Content-Type: application/json', ...codings.map((coding) => `Transfer-Encoding: ${coding}`)
  ], chunked)
  for (const codings of [['gzip, chunked'], ['deflate,chunked'], ['gzip', 'chunked'], ['identity, chunked']]) {
    const answer = await send(...codings)
    t.same([answer.status, JSON.parse(answer.body)], [501, { error: 501, message: UNKNOWN_TRANSFER_CODING }], `Transfer-Encoding ${codings.join(' + ')}: 501`)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
  t.equal((await send('Chunked')).status, 200, 'chunked alone, in any case, is read')
})
