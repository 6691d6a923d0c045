/**
 * A request refused before its body has come is answered once, and its connection let go at once
 *: not held while the body trickles in, and never answered a second time
 * (408) when REQUEST_TIMEOUT passes. A body that arrives absurdly slowly is cut off early (408), and
 * a transfer coding other than chunked is 501, in the Error shape. The policy's clock is a fake
 * one here; test/system/processes/slow-body.test.ts cuts off a slow body in real time.
 */
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { UNKNOWN_TRANSFER_CODING } from '../../service/edge/http-protocol.js'
import { acceptedBy, answers, client, closesSoon, receivedWhen, requestHead, type Client } from '../helpers/exchange.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { rawRequest } from '../helpers/server-process.js'
import { listening, settingsFrom, storedPlants, TOKEN } from '../helpers/app.js'
import { eventually } from '../helpers/webhooks.js'

const VALID = `Authorization: Bearer ${TOKEN}`

// The subtests are independent: they run at once.
t.jobs = 8

// A byte of body every this many ms, as long as the connection is open.
const DRIP = 50

/** Sends `head` and a first byte of body, then a byte every DRIP ms; resolves whether the server closed the connection soon, and what it answered. */
async function trickle (port: number, head: string) {
  const connection = await client(port)
  connection.socket.write(`${head}[`)
  const drip = setInterval(() => connection.socket.write('a'), DRIP)
  const closed = await closesSoon(connection)
  clearInterval(drip)
  return { closed, statuses: answers(connection.received()), answer: connection.received() }
}

const post = (path: string, ...headers: string[]) => requestHead(`POST ${path}`, ...headers, 'Content-Length: 100000')

t.test('a request refused while its body trickles in gets one answer, with Connection: close, and is let go at once', async (t) => {
  // Timeouts far longer than the test waits: the connection is let go by the answer, not by a timeout.
  const { port, store } = await listening(t, {}, settingsFrom({ HEADERS_TIMEOUT: '60000', REQUEST_TIMEOUT: '60000', BODY_MIN_RATE: '0' }))
  const cases: Array<[string, string, number]> = [
    ['no token', post('/plants', 'Content-Type: application/json'), 401],
    ['a wrong token', post('/plants', 'Authorization: Bearer wrong', 'Content-Type: application/json'), 401],
    ['a refused content type', post('/plants', VALID, 'Content-Type: text/plain'), 415],
    ['an unknown route', post('/nope', VALID, 'Content-Type: application/json'), 404]
  ]
  for (const [title, head, status] of cases) {
    const { closed, statuses, answer } = await trickle(port, head)
    t.ok(closed, `${title}: let go at once, not at REQUEST_TIMEOUT`)
    t.same(statuses, [status], `${title}: ${status}, and nothing after it`)
    t.match(answer, /\r\nconnection: close\r\n/i, `${title}: with Connection: close`)
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
  t.same(answers(answer), [401, 200], 'the next request is answered too')
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

t.test('BODY_MIN_RATE: a body slower than it, once BODY_RATE_GRACE has passed, is answered 408 and let go; one fast enough is stored', async (t) => {
  const clock = fakeClock()
  const { app, port, store } = await listening(t, {}, { ...settingsFrom({ BODY_MIN_RATE: '100', BODY_RATE_GRACE: '1000' }), clock })
  const accepted = acceptedBy(app.server)
  // What each connection sent, in bytes.
  const sent = [0, 0, 0]
  /** Sends `text` on the `index`th connection, and resolves once the server has read what it sent so far. */
  const send = async (index: number, connection: Client, text: string) => {
    connection.socket.write(text)
    sent[index] += Buffer.byteLength(text)
    await eventually(() => accepted[index]?.bytesRead === sent[index])
  }
  // A head and one byte of its body, then nothing.
  const tooSlow = await client(port)
  await send(0, tooSlow, `${post('/plants', VALID, 'Content-Type: application/json')}[`)
  // 50 bytes every 100 ms (500 bytes/s): a slow body, but fast enough.
  const body = `{"id":1,"name":"${'a'.repeat(900)}"}`
  const slowEnough = await client(port)
  await send(1, slowEnough, requestHead('POST /plants', VALID, 'Content-Type: application/json', 'Connection: close', `Content-Length: ${body.length}`))
  // A whole body on a connection kept open past the checks: it is no longer watched.
  const keptOpen = await client(port)
  const second = '{"id":2,"name":"kept"}'
  await send(2, keptOpen, requestHead('POST /plants', VALID, 'Content-Type: application/json', `Content-Length: ${second.length}`) + second)
  t.same(answers(await receivedWhen(keptOpen, (text) => answers(text).length > 0)), [200], 'the whole body is stored')

  for (let chunk = 0; chunk * 50 < body.length; chunk++) {
    await send(1, slowEnough, body.slice(chunk * 50, chunk * 50 + 50))
    await clock.advance(100)
    // BODY_RATE_GRACE has passed after the tenth step.
    if (chunk === 8) t.notOk(accepted[0]!.writableEnded, 'within BODY_RATE_GRACE, the slow body is waited for')
  }
  t.ok(await closesSoon(tooSlow), 'the slow body is cut off')
  t.same(answers(tooSlow.received()), [408], 'with a 408')
  t.match(tooSlow.received(), /\{"error":408,"message":"Request timed out"\}$/, 'in the Error shape')
  await slowEnough.closed
  t.match(slowEnough.received(), /^HTTP\/1\.1 200 /, 'a body at 500 bytes/s over ~2 s is stored')
  await clock.advance(1000)
  keptOpen.socket.write(requestHead('GET /healthz', 'Connection: close'))
  await keptOpen.closed
  t.same(answers(keptOpen.received()), [200, 200], 'the keep-alive connection is still open after BODY_RATE_GRACE, and answers')
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n, 2n])
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
