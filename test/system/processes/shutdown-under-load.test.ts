/**
 * Graceful shutdown under load, on a real server process with an SQLite file: hundreds of POST
 * /plants at once, SIGTERM while they are in flight. Every request must end in a complete answer
 * (a 200 with the whole Plant) or, for a request the server had not accepted yet, a connection
 * error; never a truncated body nor a non-Error 5xx. Every acknowledged plant is in the file, the
 * process exits 0 within SHUTDOWN_TIMEOUT, and the store was closed cleanly (WAL checkpointed and
 * removed, integrity intact).
 */
import { existsSync } from 'node:fs'
import { Agent, request, type IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import t from 'tap'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-shutdown-under-load'
const REQUESTS = 300
const SHUTDOWN_TIMEOUT = 10_000
// SIGTERM once this many 200s have come back: the rest are still in flight.
const SIGTERM_AFTER_RESPONSES = 10
// Ids past 2^53, so that a rounded id would show.
const FIRST_ID = 2n ** 53n + 1n

interface Outcome {
  index: number
  id: bigint
  name: string
  /** The request was written to its socket. */
  sent: boolean
  /** A response's head arrived. */
  answered: boolean
  status?: number
  headers?: IncomingHttpHeaders
  body: string
  /** The whole response arrived (every byte its framing announced). */
  complete: boolean
  /** A socket error before any response: the server never took the request. */
  connectionError?: string
  /** When the response ended, or the request failed (performance.now()). */
  settledAt?: number
}

const plantName = (index: number) => `plant ${index} sent under load \u{1f331}`

function post (url: string, agent: Agent, index: number): { outcome: Outcome, done: Promise<Outcome> } {
  const id = FIRST_ID + BigInt(index)
  const outcome: Outcome = { index, id, name: plantName(index), sent: false, answered: false, body: '', complete: false }
  const body = `{"id":${id},"name":${JSON.stringify(outcome.name)}}`
  const done = new Promise<Outcome>((resolve) => {
    const settle = () => {
      outcome.settledAt ??= performance.now()
      resolve(outcome)
    }
    const req = request(`${url}/plants`, {
      method: 'POST',
      agent,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body))
      }
    }, (res) => {
      outcome.answered = true
      outcome.status = res.statusCode
      outcome.headers = res.headers
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { outcome.body += chunk })
      res.on('end', () => { outcome.complete = res.complete })
      // 'close' comes after 'end', or alone (with an 'error') when the body was cut short.
      res.on('error', () => {})
      res.on('close', settle)
    })
    req.on('finish', () => { outcome.sent = true })
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (!outcome.answered) outcome.connectionError = error.code ?? error.message
      settle()
    })
    req.end(body)
  })
  return { outcome, done }
}

/** Why an answer is not acceptable, or undefined when it is: a complete 200 Plant or a complete Error 503. */
function problemWith (outcome: Outcome): string | undefined {
  if (!outcome.answered) return outcome.connectionError === undefined ? 'neither an answer nor an error' : undefined
  const { status, headers = {}, body } = outcome
  if (!outcome.complete) return `a truncated answer: ${status} ${JSON.stringify(body)}`
  const length = headers['content-length']
  if (length !== undefined && Number(length) !== Buffer.byteLength(body)) {
    return `Content-Length ${length} but ${Buffer.byteLength(body)} bytes`
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return `a ${status} whose body is not JSON: ${JSON.stringify(body)}`
  }
  if (status === 200) {
    return JSON.stringify(parsed) === JSON.stringify({ name: outcome.name }) ? undefined : `a 200 with ${body}`
  }
  // A request refused while the service stops may only be an Error-shaped 503.
  const error = parsed as Record<string, unknown>
  const errorShaped = typeof error === 'object' && error !== null && Object.keys(error).sort().join() === 'error,message' &&
    error.error === status && typeof error.message === 'string'
  return status === 503 && errorShaped ? undefined : `a ${status} answer: ${body}`
}

t.test('SIGTERM under load: complete answers, acknowledged plants stored, exit 0, store closed', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${file}`,
    API_TOKENS: TOKEN,
    SHUTDOWN_TIMEOUT: String(SHUTDOWN_TIMEOUT),
    // Load shedding off: a busy machine must not turn requests into "overloaded" 503s.
    PRESSURE_MAX_EVENT_LOOP_DELAY: '0',
    LOG_LEVEL: 'debug'
  })

  // One keep-alive socket per request: all of them are in flight at once.
  const agent = new Agent({ keepAlive: true, maxSockets: REQUESTS, maxFreeSockets: REQUESTS })
  t.teardown(() => agent.destroy())

  let sigtermAt: number | undefined
  let inFlightAtSigterm = 0
  let notSentAtSigterm = 0
  let completedBeforeSigterm = 0
  const outcomes: Outcome[] = []
  const sigterm = () => {
    if (sigtermAt !== undefined) return
    completedBeforeSigterm = outcomes.filter((outcome) => outcome.settledAt !== undefined).length
    inFlightAtSigterm = outcomes.filter((outcome) => outcome.sent && outcome.settledAt === undefined).length
    notSentAtSigterm = outcomes.filter((outcome) => !outcome.sent && outcome.settledAt === undefined).length
    sigtermAt = performance.now()
    server.child.kill('SIGTERM')
  }

  let twoHundreds = 0
  const requests = Array.from({ length: REQUESTS }, (_, index) => {
    const { outcome, done } = post(server.url, agent, index)
    outcomes.push(outcome)
    return done.then((settled) => {
      if (settled.status === 200 && settled.complete && ++twoHundreds === SIGTERM_AFTER_RESPONSES) sigterm()
      return settled
    })
  })
  // Should fewer than SIGTERM_AFTER_RESPONSES ever succeed, stop the server anyway; the checks below fail.
  const fallback = setTimeout(sigterm, 30_000)
  t.teardown(() => clearTimeout(fallback))

  const exitedAt = server.exited.then(() => performance.now())
  const settled = await Promise.all(requests)
  clearTimeout(fallback)
  t.ok(sigtermAt !== undefined, 'SIGTERM was sent')
  const { code, signal } = await exitWithin(server, SHUTDOWN_TIMEOUT + 10_000)
  const exitTime = Math.round(await exitedAt - (sigtermAt ?? 0))

  // The answers.
  const problems = settled.map((outcome) => [outcome, problemWith(outcome)] as const).filter(([, problem]) => problem !== undefined)
  const acknowledged = settled.filter((outcome) => outcome.status === 200 && outcome.complete)
  const refused503 = settled.filter((outcome) => outcome.status === 503)
  const connectionErrors = settled.filter((outcome) => !outcome.answered)
  const answeredAfterSigterm = settled.filter((outcome) => outcome.answered && (outcome.settledAt ?? 0) > sigtermAt!)
  const errorCodes = [...new Set(connectionErrors.map((outcome) => outcome.connectionError))].join(', ')

  t.comment(`requests: ${REQUESTS}; SIGTERM after ${completedBeforeSigterm} settled; ` +
    `in flight at SIGTERM: ${inFlightAtSigterm} (plus ${notSentAtSigterm} not yet written)`)
  t.comment(`complete answers: ${settled.length - connectionErrors.length - problems.length} ` +
    `(${acknowledged.length} x 200, ${refused503.length} x 503; ${answeredAfterSigterm.length} after SIGTERM); ` +
    `connection errors: ${connectionErrors.length}${errorCodes === '' ? '' : ` (${errorCodes})`}`)
  t.comment(`exit: code ${code}, signal ${signal}, ${exitTime} ms after SIGTERM (SHUTDOWN_TIMEOUT ${SHUTDOWN_TIMEOUT} ms)`)

  t.ok(inFlightAtSigterm > 0, `requests were in flight at SIGTERM (${inFlightAtSigterm})`)
  t.same(problems.map(([outcome, problem]) => `#${outcome.index}: ${problem}`), [],
    'every request got a complete 200 Plant (or an Error 503), or a connection error before any answer')
  t.ok(acknowledged.length >= SIGTERM_AFTER_RESPONSES, `${acknowledged.length} plants acknowledged with 200`)

  // The server's own account, from its log (one 'request completed' line per answer at debug).
  const logs = server.logs()
  const shutdownIndex = logs.findIndex((line) => /shutting down/i.test(line.msg ?? ''))
  t.ok(shutdownIndex >= 0, 'the shutdown was logged')
  const completedAfter = logs.slice(shutdownIndex + 1).filter((line) => line.msg === 'request completed').length
  t.comment(`server side: ${completedAfter} requests answered after the shutdown began`)
  t.same(logs.filter((line) => line.level >= 50).map((line) => line.msg), [], 'nothing logged at error or above')

  // The exit.
  t.same({ code, signal }, { code: 0, signal: null }, 'the process exits with code 0')
  t.ok(exitTime < SHUTDOWN_TIMEOUT, `within SHUTDOWN_TIMEOUT: ${exitTime} ms after SIGTERM`)

  // The store, closed: SQLite removes the WAL and shared-memory files when the last connection
  // closes cleanly, after checkpointing the WAL into the database file. A killed process leaves them.
  t.notOk(existsSync(`${file}-wal`), 'no -wal file left: the WAL was checkpointed and the store closed')
  t.notOk(existsSync(`${file}-shm`), 'no -shm file left')
  const db = new Database(file, { readonly: true, fileMustExist: true })
  t.teardown(() => db.close())
  db.defaultSafeIntegers(true)
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok', 'the database file is intact')
  const rows = db.prepare('SELECT id, name, tag FROM plants ORDER BY id').all() as Array<{ id: bigint, name: string, tag: string | null }>
  const stored = new Map(rows.map((row) => [row.id, row]))

  t.same(acknowledged.filter((outcome) => stored.get(outcome.id)?.name !== outcome.name || stored.get(outcome.id)?.tag !== null)
    .map((outcome) => outcome.index), [], `every one of the ${acknowledged.length} acknowledged plants is in the SQLite file, as sent`)
  const sentById = new Map(settled.map((outcome) => [outcome.id, outcome]))
  t.same(rows.filter((row) => sentById.get(row.id)?.name !== row.name).map((row) => String(row.id)), [],
    'the file holds only plants that were sent, as sent')
  // A request whose connection failed before any answer was never taken in: it stored nothing.
  t.same(connectionErrors.filter((outcome) => stored.has(outcome.id)).map((outcome) => outcome.index), [],
    'no plant was stored for a request that got no answer')
  t.same(refused503.filter((outcome) => stored.has(outcome.id)).map((outcome) => outcome.index), [],
    'no plant was stored for a request refused with 503')
  t.equal(rows.length, acknowledged.length, `the file holds exactly the acknowledged plants (${rows.length})`)
})
