/**
 * SIGTERM while keep-alive connections have many requests pipelined (written back to back,
 * without waiting for answers), on a real server process with an SQLite file. Every request the
 * server took in must be answered; one it did not take in may go unanswered, but then its plant
 * is not stored: every plant answered 200 is in the file, and every plant in the file was
 * answered 200.
 */
import { connect } from 'node:net'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-shutdown-pipelined'
const CONNECTIONS = 20
const PER_CONNECTION = 200
// SIGTERM once this many answers have come back, all connections together.
const SIGTERM_AFTER = 400
const SHUTDOWN_TIMEOUT = 20_000

interface Answer { status: number, body: string }

/** Splits the answers off the front of `buffer` (each framed by Content-Length); returns the rest. */
function takeAnswers (buffer: Buffer, answers: Answer[]): Buffer {
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n')
    if (end < 0) return buffer
    const head = buffer.subarray(0, end).toString('latin1')
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1])
    if (!Number.isInteger(length)) throw new Error(`an answer without Content-Length: ${head}`)
    if (buffer.length < end + 4 + length) return buffer
    answers.push({ status: Number(head.split(' ')[1]), body: buffer.subarray(end + 4, end + 4 + length).toString('utf8') })
    buffer = buffer.subarray(end + 4 + length)
  }
}

const idOf = (connection: number, index: number) => connection * PER_CONNECTION + index + 1

/** Writes every request of one connection at once, and collects its answers until it closes. */
function pipeline (url: string, connection: number, onAnswer: () => void): Promise<Answer[]> {
  const { hostname, port } = new URL(url)
  const requests = Array.from({ length: PER_CONNECTION }, (_, index) => {
    const body = `{"id":${idOf(connection, index)},"name":"pipelined"}`
    return `POST /plants HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  })
  return new Promise((resolve, reject) => {
    const answers: Answer[] = []
    let pending: Buffer = Buffer.alloc(0)
    const socket = connect(Number(port), hostname)
    socket.on('data', (chunk: Buffer) => {
      const before = answers.length
      try {
        pending = takeAnswers(Buffer.concat([pending, chunk]), answers)
      } catch (error) {
        socket.destroy(error as Error)
      }
      for (let index = before; index < answers.length; index++) onAnswer()
    })
    // A reset after the server stopped reading is a connection closed, not a failure of the test.
    socket.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error) })
    socket.on('close', () => resolve(answers))
    socket.write(requests.join(''))
  })
}

t.test(`SIGTERM with ${CONNECTIONS} x ${PER_CONNECTION} pipelined creates: answered 200 if and only if stored, exit 0`, async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN, SHUTDOWN_TIMEOUT: String(SHUTDOWN_TIMEOUT)
  })

  let answered = 0
  const onAnswer = () => { if (++answered === SIGTERM_AFTER) server.child.kill('SIGTERM') }
  const perConnection = await Promise.all(Array.from({ length: CONNECTIONS }, (_, connection) => pipeline(server.url, connection, onAnswer)))
  const exit = await exitWithin(server, SHUTDOWN_TIMEOUT + 10_000)

  const db = new Database(file, { readonly: true, fileMustExist: true })
  t.teardown(() => db.close())
  const stored = new Set((db.prepare('SELECT id FROM plants').pluck().all() as number[]))

  const ok = new Set<number>()
  const unexpected: string[] = []
  const statuses: Record<string, number> = {}
  perConnection.forEach((answers, connection) => answers.forEach(({ status, body }, index) => {
    statuses[status] = (statuses[status] ?? 0) + 1
    const id = idOf(connection, index)
    if (status === 200 && body === '{"name":"pipelined"}') ok.add(id)
    else if (status !== 503 || !/^\{"error":503,"message":"[^"]+"\}$/.test(body)) unexpected.push(`${id}: ${status} ${body}`)
  }))
  const unanswered = CONNECTIONS * PER_CONNECTION - perConnection.reduce((sum, answers) => sum + answers.length, 0)
  t.comment(`answers by status: ${JSON.stringify(statuses)}; unanswered: ${unanswered}; stored: ${stored.size}; exit: ${JSON.stringify(exit)}`)

  t.ok(answered > SIGTERM_AFTER, 'SIGTERM came while requests were in flight')
  t.same(unexpected, [], 'every answer is a 200 Plant or an Error-shaped 503')
  t.same([...ok].filter((id) => !stored.has(id)), [], 'every plant answered 200 is stored')
  t.same([...stored].filter((id) => !ok.has(id)), [], 'every stored plant was answered 200')
  t.same(exit, { code: 0, signal: null }, 'the process exits 0')
})
