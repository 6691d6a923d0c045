/**
 * What the server does with its connections (service/edge/connections.ts), over real sockets: which one
 * makes room at the connection limit, what a silent one gets, and how each ends at shutdown. The
 * policy's timers run on a fake clock; the decisions in detail: test/unit/connection-table.test.ts.
 */
import { once } from 'node:events'
import type { Socket } from 'node:net'
import t from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { LINGER, SILENT_GRACE } from '../../service/edge/connection-table.js'
import { listening, storedPlants, TOKEN, type App } from '../helpers/app.js'
import { acceptedBy, answers, client, closesSoon, receivedWhen, turns, type Client } from '../helpers/exchange.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { assertNewcomerMakesRoom } from '../helpers/make-room.js'
import { eventually } from '../helpers/webhooks.js'

// The subtests are independent, each with its own server, and some wait for Node's timers: they run at once.
t.jobs = 12

const slowBody = '{"id":1,"name":"slow"}'
// Another plant, of the same length: the same head (Content-Length) serves both.
const lateBody = '{"id":2,"name":"late"}'
/** Resolves when the server has parsed the head of a request: from then on it is in flight. */
const takenIn = (app: App) => once(app.server, 'request')
/** Resolves once the connection has received `count` answers. */
const answered = (connection: Client, count = 1) => receivedWhen(connection, (text) => answers(text).length >= count)
const SLOW_POST_HEAD = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${slowBody.length}\r\n\r\n`

t.test('at the connection limit, the oldest connection that owes nothing makes room; one mid-request is kept', async (t) => {
  const clock = fakeClock()
  const { app, port, store } = await listening(t, {}, { maxConnections: 4, clock })
  const midRequest = await client(port)
  const inFlight = takenIn(app)
  midRequest.socket.write(SLOW_POST_HEAD + slowBody.slice(0, 5))
  await inFlight
  const silent = await client(port)
  const idle = await client(port)
  idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  await answered(idle)
  // Past the time a connection that has sent nothing is spared.
  await clock.advance(SILENT_GRACE)
  const fourth = await client(port)
  t.ok(await closesSoon(silent), 'the fourth connection closed the oldest that owed nothing: the silent one')
  const fifth = await client(port)
  t.ok(await closesSoon(idle), 'the fifth closed the next: the one idle after its answer')
  fifth.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  await fifth.closed
  t.same(answers(fifth.received()), [200], 'the newest client is answered')

  midRequest.socket.end(slowBody.slice(5))
  await midRequest.closed
  t.same(answers(midRequest.received()), [200], 'the connection mid-request was kept, and its request answered')
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n])
  fourth.socket.destroy()
})

t.test('at the limit with only known clients\' idle connections, the oldest of them makes room', async (t) => {
  // At the limit when a connection arrives, one makes room: with three, the third makes it.
  const { port } = await listening(t, {}, { maxConnections: 3 })
  const known: Client[] = []
  for (let count = 0; count < 2; count++) {
    const keepAlive = await client(port)
    keepAlive.socket.write(`GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`)
    await answered(keepAlive)
    known.push(keepAlive)
  }
  await assertNewcomerMakesRoom(t, port, known[0]!, known[1]!, { evicted: 'the oldest known connection, idle, made room', kept: 'the other stays' })
  known[1]!.socket.destroy()
})

t.test('at the limit with many idle strangers, the oldest makes room without a scan of them all', async (t) => {
  // More idle connections than the scan looks at for a stalling one (64): it stops and takes the oldest idle.
  const clock = fakeClock()
  const { app, port } = await listening(t, {}, { maxConnections: 80, clock })
  const accepted = acceptedBy(app.server)
  const idle: Client[] = []
  for (let count = 0; count < 79; count++) idle.push(await client(port))
  t.ok(await eventually(() => accepted.length === 79), 'the server has accepted them all')
  await turns()
  // Past the time a connection that has sent nothing is spared.
  await clock.advance(SILENT_GRACE)
  await assertNewcomerMakesRoom(t, port, idle[0]!, idle[1]!, { evicted: 'the oldest idle connection made room', kept: 'the next one stays' })
  for (const { socket } of idle) socket.destroy()
})

t.test('when every connection owes an answer, a new one is refused', async (t) => {
  const { app, port } = await listening(t, {}, { maxConnections: 2 })
  const busy: Client[] = []
  for (let index = 0; index < 2; index++) {
    const connection = await client(port)
    const inFlight = takenIn(app)
    connection.socket.write(SLOW_POST_HEAD + slowBody.slice(0, 5))
    await inFlight
    busy.push(connection)
  }
  const refused = await client(port)
  t.ok(await closesSoon(refused), 'the third connection is closed at once')
  t.equal(refused.received(), '', 'without a word')
  busy[0].socket.end(slowBody.slice(5))
  await busy[0].closed
  t.same(answers(busy[0].received()), [200], 'the busy ones are answered')
  busy[1].socket.destroy()
})

t.test('at shutdown: the request in flight is answered, one read after it gets 503 and stores nothing', async (t) => {
  const { app, port, store } = await listening(t)
  const pipelined = await client(port)
  const inFlight = takenIn(app)
  pipelined.socket.write(SLOW_POST_HEAD + slowBody.slice(0, 5))
  await inFlight
  const closing = app.close()
  // Once the server stops listening, its connections are closing.
  t.ok(await eventually(() => !app.server.listening), 'the server stops listening')
  // The rest of the first body, then a second request on the same connection.
  pipelined.socket.write(slowBody.slice(5) + SLOW_POST_HEAD.replace('Content-Length', 'X-Second: 1\r\nContent-Length') +
    lateBody)
  await pipelined.closed
  await closing
  const text = pipelined.received()
  t.same(answers(text), [200, 503], 'the first answered 200, the second 503')
  t.match(text, /\{"name":"slow"\}[^]*\r\n\r\n\{"error":503,"message":"The service is shutting down, try again later"\}$/)
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n], 'only the first is stored')
})

t.test('at shutdown, a connection that has said nothing yet is closed at once, not held until HEADERS_TIMEOUT', async (t) => {
  // The linger time never passes: the connection closes as its client answers the server's FIN.
  const clock = fakeClock()
  const { app, port } = await listening(t, {}, { http: { headersTimeout: 60_000 }, clock })
  const silent = await client(port)
  const closing = app.close()
  t.ok(await closesSoon(silent), 'closed at once, not after HEADERS_TIMEOUT (60 s) nor after the linger time')
  await closing
  t.equal(silent.received(), '', 'without a word')
})

/**
 * Runs `during` once the app's close has drained the connections and before its server stops
 * listening: the moment a client's new connection is still accepted (preClose hooks that wait,
 * such as the feed's, widen it).
 */
function beforeListeningStops (app: App, during: () => Promise<void>) {
  const close = app.server.close.bind(app.server)
  app.server.close = ((callback?: (error?: Error) => void) => {
    during().then(() => close(callback), callback)
    return app.server
  }) as typeof app.server.close
}

t.test('at shutdown, a connection accepted after the drain began is closed too, not held until HEADERS_TIMEOUT', async (t) => {
  const clock = fakeClock()
  const { app, port, store } = await listening(t, {}, { http: { headersTimeout: 60_000 }, clock })
  const late: Client[] = []
  let accepted = () => {}
  const bothAccepted = new Promise<void>((resolve) => { accepted = resolve })
  beforeListeningStops(app, async () => {
    late.push(await client(port), await client(port))
    // The second client's request comes with its connection.
    late[1].socket.write(SLOW_POST_HEAD + slowBody)
    await turns()
    accepted()
  })
  const closing = app.close()
  await bothAccepted
  t.ok(await closesSoon(late[0]), 'the silent one is closed at once, not after HEADERS_TIMEOUT (60 s)')
  t.equal(late[0].received(), '', 'without a word')
  t.ok(await closesSoon(late[1]), 'so is the one that sent a request')
  t.same(answers(late[1].received()), [503], 'once its request is answered 503')
  t.match(late[1].received(), /"message":"The service is shutting down, try again later"/, 'saying why')
  await closing
  t.same(await storedPlants(store), [], 'and nothing stored')
})

t.test('at shutdown, a connection is half-closed after its last answer; what its client sends then is not taken in', async (t) => {
  const clock = fakeClock()
  const { app, port, store } = await listening(t, {}, { clock })
  const accepted = acceptedBy(app.server)
  const late = await client(port, true)
  const inFlight = takenIn(app)
  late.socket.write(SLOW_POST_HEAD + slowBody.slice(0, 5))
  await inFlight
  const closing = app.close()
  late.socket.write(slowBody.slice(5))
  await new Promise((resolve) => late.socket.once('end', resolve))
  late.socket.write(SLOW_POST_HEAD + lateBody)
  const sent = 2 * SLOW_POST_HEAD.length + slowBody.length + lateBody.length
  t.ok(await eventually(() => accepted[0]!.bytesRead === sent), 'the server has read the late request')
  t.equal(clock.pending(), 1, 'and waits for its client to close its side')
  await clock.advance(LINGER - 1)
  t.notOk(accepted[0]!.destroyed, 'for the linger time')
  await clock.advance(1)
  t.ok(accepted[0]!.destroyed, 'then lets go of the connection')
  await closing
  late.socket.end()
  await late.closed
  t.same(answers(late.received()), [200], 'only the request taken in before was answered')
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n], 'the late request stored nothing')
})

t.test('CONNECTION_TIMEOUT does not cut off an answer the service is still working on', async (t) => {
  const store = createMemoryStore()
  const slowCreate = store.create.bind(store)
  let release = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  store.create = async (plant) => {
    await released
    return slowCreate(plant)
  }
  const { app, port } = await listening(t, { store }, { connectionTimeout: 300 })
  const timedOut = once(app.server, 'timeout')
  const patient = await client(port)
  patient.socket.write(SLOW_POST_HEAD.replace('Host: x', 'Host: x\r\nConnection: close') + slowBody)
  // The store answers only once the connection has been silent for CONNECTION_TIMEOUT.
  await timedOut
  release()
  await patient.closed
  t.same(answers(patient.received()), [200], 'answered 200 after the timeout passed')
})

t.test('CONNECTION_TIMEOUT closes a connection whose client does not read its answer', async (t) => {
  const { app, port } = await listening(t, {}, { connectionTimeout: 300 })
  const events: string[] = []
  app.server.once('timeout', () => events.push('timeout'))
  const accepted = once(app.server, 'connection') as Promise<[Socket]>
  const reader = await client(port)
  reader.socket.pause()
  const [serverSide] = await accepted
  const closed = once(serverSide, 'close').then(() => events.push('close'))
  // Some 15 MB in all, more than the kernel's socket buffers hold: the server is left holding the rest.
  reader.socket.write('GET /documentation/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(10))
  const count = () => new Promise<number>((resolve, reject) => app.server.getConnections((error, n) => error ? reject(error) : resolve(n)))
  t.ok(await eventually(() => serverSide.writableLength > 0), 'the server holds what its client does not read')
  t.equal(await count(), 1, 'the connection is open while the answer is written')
  await closed
  t.same(events, ['timeout', 'close'], 'closed once CONNECTION_TIMEOUT found it silent')
  t.equal(await count(), 0, 'no connection is left')
  reader.socket.destroy()
})

t.test('beyond the tokenless share, a new connection that has sent nothing yet is spared a moment: its request may be on its way', async (t) => {
  const clock = fakeClock()
  const { app, port } = await listening(t, {}, { maxConnections: 10, maxTokenless: 1, clock })
  const accepted = acceptedBy(app.server)
  const quiet = await client(port)
  t.ok(await eventually(() => accepted.length === 1), 'the quiet one is accepted')
  await turns()
  await clock.advance(SILENT_GRACE - 1)
  const admitted = once(app.server, 'connection')
  const second = await client(port)
  // The server decided, as it accepted the second, which stranger's connection makes room.
  await admitted
  quiet.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  await quiet.closed
  t.same(answers(quiet.received()), [200], 'within the grace, the quiet one is not taken for a silent one: its request, sent late, is answered')
  second.socket.destroy()
})
