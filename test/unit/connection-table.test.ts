/**
 * The connection policy's decisions (service/edge/connection-table.ts), on fake sockets and the fake
 * clock: whom it evicts and in what order, how long a silent newcomer is spared, how long a
 * closing connection lingers, when a body is too slow, what a silent connection gets, and how it drains.
 */
import t from 'tap'
import { ConnectionTable, LINGER, SILENT_GRACE, STALLING_SCAN, type Answer, type ClientSocket, type ConnectionTableOptions } from '../../service/edge/connection-table.js'
import { turns } from '../helpers/exchange.js'
import { fakeClock } from '../helpers/fake-clock.js'

class FakeSocket implements ClientSocket {
  bytesRead = 0
  writableLength = 0
  writableEnded = false
  destroyed = false
  constructor (readonly name: string, private readonly closed: () => void) {}
  end () { this.writableEnded = true }
  destroy () {
    if (this.destroyed) return
    this.destroyed = true
    // As a net.Socket: 'close' comes at a later turn of the event loop.
    setImmediate(this.closed)
  }
}

class FakeAnswer implements Answer {
  req = { complete: false }
  headersSent = false
}

// After `turns()` the table has read what its new connections sent, and forgotten what closed.

function tableOf (options: Partial<ConnectionTableOptions<FakeSocket>> = {}) {
  const clock = fakeClock()
  const timedOut: string[] = []
  const table = new ConnectionTable<FakeSocket>({
    maxConnections: 0,
    maxTokenless: 0,
    minBodyRate: 0,
    bodyRateGrace: 0,
    clock,
    timeOut: (socket, message) => { timedOut.push(`${socket.name}: ${message}`) },
    ...options
  })
  const sockets: FakeSocket[] = []
  /** A connection accepted, as the server's 'connection' event gives it. */
  const connect = (name: string) => {
    const socket: FakeSocket = new FakeSocket(name, () => table.forget(socket))
    sockets.push(socket)
    table.admit(socket)
    return socket
  }
  /** A request read whole on the connection, answered and (unless `pending`) ended; with `token` it verified. */
  const request = (socket: FakeSocket, { token = false, bytes = 100, pending = false } = {}) => {
    socket.bytesRead += bytes
    const answer = new FakeAnswer()
    const intake = table.takeIn(socket, answer, false)
    answer.req.complete = true
    if (token) table.markKnown(socket)
    if (!pending) table.settle(socket)
    return { intake, answer }
  }
  const destroyed = () => sockets.filter((socket) => socket.destroyed).map((socket) => socket.name)
  return { table, clock, timedOut, connect, request, destroyed }
}

t.test('at the connection limit: a stalling stranger first, then idle ones oldest first, then one spared for its silence', async (t) => {
  const { clock, connect, request, destroyed } = tableOf({ maxConnections: 6 })
  connect('idle')
  const stalled = connect('stalled')
  const busy = connect('busy')
  const unread = connect('unread')
  await turns()
  stalled.bytesRead = 20 // headers begun, not all come
  request(busy, { pending: true })
  request(unread)
  await clock.advance(SILENT_GRACE)
  connect('spared')
  await turns()
  connect('first')
  t.same(destroyed(), ['stalled'], 'one that stalls in its headers goes before an older idle one')
  unread.writableLength = 4096 // its client reads none of what it was sent
  await turns()
  connect('second')
  t.same(destroyed(), ['stalled', 'unread'], 'then one whose client does not read its answers')
  await turns()
  connect('third')
  t.same(destroyed(), ['idle', 'stalled', 'unread'], 'then the oldest idle one')
  await turns()
  connect('fourth')
  t.same(destroyed(), ['idle', 'stalled', 'unread', 'spared'], 'then the oldest of those spared for their silence, when no other may go')
  await turns()
  connect('fifth')
  t.same(destroyed(), ['idle', 'stalled', 'unread', 'spared', 'first'], 'and so on, oldest first')
  t.notOk(busy.destroyed, 'one whose request is being handled is never closed')
})

t.test('connections accepted so recently that what they sent is unread never make room; once read, the refused one\'s drop makes it', async (t) => {
  const { table, connect, destroyed } = tableOf({ maxConnections: 2 })
  connect('first')
  connect('second')
  t.same(destroyed(), [], 'at the limit, with both just accepted, none goes')
  table.makeRoom()
  t.same(destroyed(), [], 'nor for a connection refused (dropped) meanwhile')
  await turns()
  table.makeRoom()
  t.same(destroyed(), ['first'], 'once read, a dropped connection makes room for the next')
})

t.test('known clients\' idle connections go only when no stranger may, least recently used first; a busy one never', async (t) => {
  const { table, clock, connect, request, destroyed } = tableOf({ maxConnections: 4 })
  const older = connect('older')
  const newer = connect('newer')
  const working = connect('working')
  await turns()
  request(older, { token: true })
  request(newer, { token: true })
  request(working, { token: true, pending: true })
  // Used again: now the most recently used.
  request(older, { token: true })
  await clock.advance(SILENT_GRACE)
  const first = connect('first')
  t.same(destroyed(), ['newer'], 'the least recently used idle known connection made room, not a fresh stranger')
  request(first, { pending: true })
  await turns()
  const second = connect('second')
  t.same(destroyed(), ['older', 'newer'], 'then the next, not the busy stranger')
  request(second, { pending: true })
  await turns()
  connect('third')
  t.same(destroyed(), ['older', 'newer'], 'when every connection is busy, none goes')
  t.notOk(working.destroyed, 'a known client\'s busy connection stays')
  table.endAfterAnswer(working)
  table.makeRoom()
  t.same(destroyed(), ['older', 'newer', 'working'], 'one that closes after its answer owes nothing more: it may go')

  const mixed = tableOf({ maxConnections: 3 })
  const known = mixed.connect('known')
  mixed.connect('silent')
  await turns()
  mixed.request(known, { token: true })
  mixed.connect('newcomer')
  t.same(mixed.destroyed(), ['silent'], 'a stranger, even one spared for its silence, goes before a known client')
})

t.test('the scan for a stalling stranger stops past STALLING_SCAN once an idle one is found', async (t) => {
  const { clock, connect, destroyed } = tableOf({ maxConnections: STALLING_SCAN + 3 })
  for (let index = 0; index < STALLING_SCAN; index++) connect(`idle ${index}`)
  const late = connect('stalled late')
  await turns()
  late.bytesRead = 20
  await clock.advance(SILENT_GRACE)
  connect('newcomer')
  t.same(destroyed(), [], 'below the limit, nothing goes')
  connect('at the limit')
  t.same(destroyed(), ['idle 0'], 'past the scan, the oldest idle one goes rather than the stalling one behind it')

  const near = tableOf({ maxConnections: 5 })
  for (let index = 0; index < 3; index++) near.connect(`idle ${index}`)
  const stalled = near.connect('stalled')
  await turns()
  stalled.bytesRead = 20
  await near.clock.advance(SILENT_GRACE)
  near.connect('at the limit')
  t.same(near.destroyed(), ['stalled'], 'within the scan, the stalling one goes first')
})

t.test('beyond the tokenless share, a silent newcomer is spared for SILENT_GRACE; when none may go, the new one is over the share', async (t) => {
  const { table, clock, connect, request, destroyed } = tableOf({ maxTokenless: 2 })
  connect('quiet')
  await clock.advance(1)
  const talking = connect('talking')
  await turns()
  talking.bytesRead = 20
  const over = connect('over')
  t.same(destroyed(), ['talking'], 'one that has begun a request and stalls goes at once')
  await turns()
  t.notOk(table.isOverShare(over), 'room was made: the new one is within the share')
  await clock.advance(SILENT_GRACE - 2)
  const next = connect('next')
  t.same(destroyed(), ['talking'], `a connection silent for less than ${SILENT_GRACE} ms is spared`)
  t.ok(table.isOverShare(next), 'and with none that may go, the newcomer is over the share')
  await clock.advance(1)
  const last = connect('last')
  t.same(destroyed(), ['quiet', 'talking'], `silent for ${SILENT_GRACE} ms, it goes as an idle stranger`)
  t.notOk(table.isOverShare(last))
  request(next, { token: true })
  t.notOk(table.isOverShare(next), 'once a request on it carries a verifying token, it is a known client\'s')
  t.notOk(table.isOverShare(new FakeSocket('unknown', () => {})), 'a connection the table does not hold is not')
})

t.test('at shutdown: one that owes nothing is half-closed at once and cut off after LINGER; a busy one once answered; a request read later is answered unhandled', async (t) => {
  const { table, clock, connect, request } = tableOf()
  const idle = connect('idle')
  const busy = connect('busy')
  request(busy, { pending: true })
  await turns()
  table.drain()
  t.ok(idle.writableEnded, 'the idle one is half-closed at once')
  t.notOk(busy.writableEnded, 'the busy one is not')
  await clock.advance(LINGER - 1)
  t.notOk(idle.destroyed, 'its client may still close its side')
  await clock.advance(1)
  t.ok(idle.destroyed, `cut off after ${LINGER} ms`)

  t.equal(table.takeIn(busy, new FakeAnswer(), false), 'shutting down', 'a request read while closing is answered, not handled')
  table.settle(busy)
  t.notOk(busy.writableEnded, 'the connection still owes one answer')
  table.settle(busy)
  t.ok(busy.writableEnded, 'half-closed once it owes nothing')
  t.equal(table.takeIn(busy, new FakeAnswer(), false), 'unread', 'what it reads after that is not taken in')
  await clock.advance(LINGER)
  t.ok(busy.destroyed)
  t.equal(table.takeIn(new FakeSocket('unknown', () => {}), new FakeAnswer(), false), undefined, 'a request through no connection (inject) is not the table\'s')
})

t.test('at shutdown, a connection just accepted, or accepted until the server stops listening, closes once what it sent is read: at once if it sent nothing', async (t) => {
  const { table, connect, request } = tableOf()
  const justBefore = connect('just before')
  table.drain()
  const silent = connect('silent')
  const asking = connect('asking')
  t.notOk(justBefore.writableEnded || silent.writableEnded || asking.writableEnded, 'not before the server has read what they sent')
  t.equal(request(asking, { pending: true }).intake, 'shutting down', 'a request read on one is answered, not handled')
  await turns()
  t.ok(justBefore.writableEnded, 'one accepted just before the drain, silent, is half-closed')
  t.ok(silent.writableEnded, 'so is one accepted after it')
  t.notOk(asking.writableEnded, 'one that owes an answer is not')
  table.settle(asking)
  t.ok(asking.writableEnded, 'until it is answered')
})

t.test('a body slower than minBodyRate past bodyRateGrace is timed out, checked ten times a grace; a whole or answered one is let be', async (t) => {
  const { table, clock, timedOut, connect } = tableOf({ minBodyRate: 100, bodyRateGrace: 1000 })
  t.equal(clock.pending(), 1, 'the checks run on the clock')
  const receive = (name: string) => {
    const socket = connect(name)
    socket.bytesRead = 200
    const answer = new FakeAnswer()
    t.equal(table.takeIn(socket, answer, true), 'taken')
    return { socket, answer }
  }
  receive('silent')
  const trickling = receive('trickling')
  const whole = receive('whole')
  const answered = receive('answered')
  const unframed = connect('unframed')
  table.takeIn(unframed, new FakeAnswer(), false)
  whole.answer.req.complete = true
  answered.answer.headersSent = true
  await clock.advance(900)
  trickling.socket.bytesRead += 50 // 50 bytes: half a second more at 100 bytes/s
  await clock.advance(99)
  t.same(timedOut, [], 'within the grace, none')
  await clock.advance(1)
  t.same(timedOut, ['silent: Request body too slow'], 'at the grace, the body that has not moved')
  await clock.advance(499)
  t.same(timedOut, ['silent: Request body too slow'], 'the trickling one has earned half a second more')
  await clock.advance(1)
  t.same(timedOut, ['silent: Request body too slow', 'trickling: Request body too slow'], 'and is timed out at its end')
  await clock.advance(10_000)
  t.equal(timedOut.length, 2, 'a body read whole, one already answered and a request without a body are never timed out')
  table.stop()
  t.equal(clock.pending(), 0, 'stopped, no check is left')
  const unchecked = tableOf()
  t.equal(unchecked.clock.pending(), 0, 'with no minimum rate, nothing is checked')
  unchecked.table.stop()
})

t.test('a connection silent for CONNECTION_TIMEOUT: closed if it owes nothing, 408 if a request had begun, left alone while its answer is worked on', async (t) => {
  const { table, timedOut, connect, request } = tableOf()
  const idle = connect('idle')
  const begun = connect('begun')
  const body = connect('body')
  const working = connect('working')
  const unread = connect('unread')
  const ending = connect('ending')
  request(idle)
  begun.bytesRead = 20
  body.bytesRead = 20
  table.takeIn(body, new FakeAnswer(), true)
  request(working, { pending: true })
  request(unread, { pending: true }).answer.headersSent = true
  unread.writableLength = 4096
  request(ending, { pending: true })
  table.endAfterAnswer(ending)
  for (const socket of [idle, begun, body, working, unread, ending]) table.wentSilent(socket)
  t.same(timedOut, ['begun: Connection timed out', 'body: Connection timed out'], 'a request begun, its head or its body incomplete: 408')
  t.ok(idle.destroyed, 'one that owes nothing is closed without a word')
  t.ok(ending.destroyed, 'so is one that closes after its answer')
  t.ok(unread.destroyed, 'and one whose client does not read its answer')
  t.notOk(working.destroyed, 'one whose answer the service is working on is left to answer')
  table.markKnown(new FakeSocket('unknown', () => {}))
  table.endAfterAnswer(new FakeSocket('unknown', () => {}))
  table.settle(new FakeSocket('unknown', () => {}))
  table.forget(new FakeSocket('unknown', () => {}))
  t.equal(timedOut.length, 2, 'sockets the table does not hold are left alone')
})
