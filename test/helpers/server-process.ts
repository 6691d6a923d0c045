import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { connect } from 'node:net'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Test } from 'tap'
import { ConfigSchema } from '../../service/config/index.js'

/** The server entry, run as TypeScript source through the loaders tap gave this process. */
export const SERVER_ENTRY = fileURLToPath(new URL('../../service/entry-points/server.ts', import.meta.url))

/**
 * Node's arguments for a child that runs TypeScript source: the loaders tap gave this process, each
 * named by its absolute URL (.taprc names ours from the project's root; a child may run elsewhere).
 */
export const NODE_ARGS = process.execArgv.map((arg) => arg.replace(/^--import=(\.\.?\/.*)$/, (_, path: string) => `--import=${pathToFileURL(path).href}`))

/** Start-up goes through the TypeScript loader: slow, on a busy machine slower still. */
export const START_TIMEOUT = 60_000 // generous: the TypeScript loader and coverage make a start slow on a busy machine
// How long a server still running at teardown has to stop on SIGTERM before it is killed.
const TEARDOWN_GRACE = 3000
// How long a log line may take to arrive after what caused it, on a loaded machine.
const LOG_LINE_MARGIN = 10_000

// Every variable the service reads: none of them may leak in from the environment of the test run.
const SERVICE_VARIABLES = Object.keys(ConfigSchema.properties)

/** Variables to set for the child; `undefined` removes one of the defaults. */
export type EnvOverrides = Record<string, string | undefined>

export interface Exit { code: number | null, signal: NodeJS.Signals | null }

/** One line of the JSON log. */
export interface LogLine {
  level: number
  msg?: string
  reqId?: string
  [key: string]: unknown
}

export interface SpawnedServer {
  child: ChildProcess
  /** Everything written on stdout so far. */
  stdout (): string
  /** Everything written on stderr so far. */
  stderr (): string
  /** The stdout lines so far that are JSON log lines. */
  logs (): LogLine[]
  /** Resolves with the first log line (past or future) that matches; rejects on exit or timeout. */
  waitForLog (match: (line: LogLine) => boolean, timeout?: number): Promise<LogLine>
  /**
   * The log lines that match, once at least one has arrived (or `timeout` ms passed, or the server
   * exited): a line is written after the answer that caused it, and reaches this process later still.
   */
  logged (match: (line: LogLine) => boolean, timeout?: number): Promise<LogLine[]>
  /** Resolves once the process has exited and its stdout and stderr are read to their end. */
  exited: Promise<Exit>
}

export interface ServerProcess extends SpawnedServer {
  /** `http://127.0.0.1:<port>`, the address the server logged. */
  url: string
}

/** What the helpers need of a tap test: a teardown. */
export interface Teardown { teardown (fn: () => unknown): void }

/**
 * A clean environment for the server: the test run's own (loaders, tap's process info) without any
 * service variable, then the defaults (127.0.0.1, PORT=0, info, memory:, no load shedding), then
 * the overrides.
 */
export function serverEnv (overrides: EnvOverrides = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SERVICE_VARIABLES) delete env[name]
  // Load shedding off: on a loaded machine the event loop's delay alone would refuse requests 503.
  Object.assign(env, { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', DATABASE_URL: 'memory:', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' })
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}

function parseLogLine (line: string): LogLine | undefined {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === 'object' && value !== null && typeof (value as LogLine).level === 'number'
      ? value as LogLine
      : undefined
  } catch {
    return undefined
  }
}

const isAlive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

export interface SpawnOptions {
  /** Starts the server under `ulimit -n <fdLimit>`: at most that many open file descriptors. */
  fdLimit?: number
  /** What node runs instead of the TypeScript entry, e.g. the bundle: its arguments. */
  args?: string[]
}

/**
 * Spawns `node <loaders> service/entry-points/server.ts` (or `node <args>`) with a clean environment, without
 * waiting for anything. At the test's teardown a child still running is stopped (SIGTERM, then
 * SIGKILL after TEARDOWN_GRACE ms).
 */
export function spawnServer (t: Teardown, overrides: EnvOverrides = {}, options: SpawnOptions = {}): SpawnedServer {
  const command = [process.execPath, ...(options.args ?? [...NODE_ARGS, SERVER_ENTRY])]
  // The shell sets the limit, then becomes node (exec): the child is the server itself, for signals.
  const [file, ...args] = options.fdLimit === undefined
    ? command
    : ['/bin/sh', '-c', `ulimit -n ${options.fdLimit} && exec "$@"`, 'sh', ...command]
  const child = spawn(file, args, { env: serverEnv(overrides), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  let partial = ''
  const lines: LogLine[] = []
  const waiters = new Set<(line: LogLine) => void>()

  const exited = new Promise<Exit>((resolve) => {
    // 'close', not 'exit': by then every line the process wrote has been read.
    child.once('close', (code, signal) => resolve({ code, signal }))
  })
  // A spawn failure is reported through 'error'; without a listener it would crash the test run.
  child.once('error', (error) => { err += `spawn failed: ${error.message}\n` })

  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
    const pieces = (partial + chunk).split('\n')
    partial = pieces.pop()!
    for (const piece of pieces) {
      const line = parseLogLine(piece)
      if (line === undefined) continue
      lines.push(line)
      for (const waiter of [...waiters]) waiter(line)
    }
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })

  t.teardown(async () => {
    if (!isAlive(child)) return exited
    // Asked to stop first, so that it exits on its own and writes its coverage; killed if it lingers.
    child.kill('SIGTERM')
    const lingering = setTimeout(() => child.kill('SIGKILL'), TEARDOWN_GRACE)
    await exited
    clearTimeout(lingering)
  })

  function waitForLog (match: (line: LogLine) => boolean, timeout = START_TIMEOUT): Promise<LogLine> {
    const seen = lines.find(match)
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise<LogLine>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        waiters.delete(waiter)
      }
      const waiter = (line: LogLine) => {
        if (!match(line)) return
        done()
        resolve(line)
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`no matching log line within ${timeout} ms\nstdout:\n${out}\nstderr:\n${err}`))
      }, timeout)
      waiters.add(waiter)
      // Let the stdout data of the exit be read before giving up on it.
      exited.then(({ code, signal }) => setImmediate(() => {
        if (!waiters.has(waiter)) return
        done()
        reject(new Error(`the server exited (code ${code}, signal ${signal}) before the log line\nstdout:\n${out}\nstderr:\n${err}`))
      }), () => {})
    })
  }

  async function logged (match: (line: LogLine) => boolean, timeout = LOG_LINE_MARGIN): Promise<LogLine[]> {
    await waitForLog(match, timeout).catch(() => undefined)
    return lines.filter(match)
  }

  return { child, stdout: () => out, stderr: () => err, logs: () => [...lines], waitForLog, logged, exited }
}

const LISTENING = /^Server listening at (http:\/\/127\.0\.0\.1:(\d+))$/

/** Starts the server and resolves once it logged the address it listens at. */
export async function startServer (t: Teardown, overrides: EnvOverrides = {}, options: SpawnOptions = {}): Promise<ServerProcess> {
  const server = spawnServer(t, overrides, options)
  const line = await server.waitForLog((candidate) => LISTENING.test(candidate.msg ?? ''), START_TIMEOUT)
  const [, url] = LISTENING.exec(line.msg!)!
  return { ...server, url }
}

/** The exit of a server, or a rejection if it is still running after `timeout` ms. */
export async function exitWithin (server: SpawnedServer, timeout: number): Promise<Exit> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(
      `still running after ${timeout} ms\nstdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`)), timeout)
  })
  try {
    return await Promise.race([server.exited, late])
  } finally {
    clearTimeout(timer)
  }
}

/** That a server asked to stop (SIGTERM) exited 0; if not, the message shows its last log lines but the requests'. */
export function assertStopsCleanly (t: Test, server: SpawnedServer, exit: Exit, message = 'the instance stops cleanly') {
  const lastLines = () => server.stdout().split('\n').filter((line) => !line.includes('request completed') && !line.includes('request refused'))
    .slice(-40).join('\n')
  t.same(exit, { code: 0, signal: null }, `${message}${exit.code === 0 ? '' : `; its last lines:\n${lastLines()}\n${server.stderr()}`}`)
}

/** The non-empty lines of a text (stderr is expected to hold whole lines). */
export function linesOf (text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '')
}

export interface RawResponse {
  status: number
  headers: Record<string, string[]>
  body: string
}

/**
 * Sends a request written by hand on a fresh socket (e.g. with a header repeated, which fetch and
 * http.request would merge) and reads the response until the server closes the connection. The
 * body is sent as given: framed by a Content-Length, unless `head` says Transfer-Encoding.
 */
export function rawRequest (url: string, head: string[], body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    socket.setTimeout(10_000, () => socket.destroy(new Error('no complete response within 10 s')))
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', reject)
    socket.on('end', () => {
      try {
        resolve(parseRawResponse(Buffer.concat(chunks).toString('utf8')))
      } catch (error) {
        reject(error)
      }
    })
    // A chunked body (given already framed) has no Content-Length.
    const length = head.some((line) => /^transfer-encoding:/i.test(line)) ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]
    socket.write([...head, 'Connection: close', ...length, '', body].join('\r\n'))
  })
}

function dechunk (text: string): string {
  let rest = text
  let body = ''
  for (;;) {
    const eol = rest.indexOf('\r\n')
    const size = parseInt(rest.slice(0, eol), 16)
    if (eol < 0 || Number.isNaN(size)) throw new Error(`bad chunked body: ${JSON.stringify(text)}`)
    if (size === 0) return body
    body += rest.slice(eol + 2, eol + 2 + size)
    rest = rest.slice(eol + 2 + size + 2)
  }
}

function parseRawResponse (text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(`incomplete response: ${JSON.stringify(text)}`)
  const [statusLine, ...headerLines] = text.slice(0, end).split('\r\n')
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
  if (status === null) throw new Error(`bad status line: ${statusLine}`)
  const headers: Record<string, string[]> = {}
  for (const line of headerLines) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).trim().toLowerCase()
    ;(headers[name] ??= []).push(line.slice(colon + 1).trim())
  }
  const payload = text.slice(end + 4)
  const chunked = headers['transfer-encoding']?.some((value) => /chunked/i.test(value)) ?? false
  return { status: Number(status[1]), headers, body: chunked ? dechunk(payload) : payload }
}

export interface SlowRequest {
  /** Sends the rest of the body and resolves with the whole response. */
  finish (rest: string): Promise<{ status: number, headers: IncomingHttpHeaders, body: string }>
}

/**
 * Starts a POST whose headers and first part of the body are sent now, the rest only on
 * `finish`: the request is in flight for as long as the caller wants. Its own connection.
 */
export function slowPost (url: string, headers: Record<string, string>, first: string, total: number): SlowRequest {
  let pending: ReturnType<typeof httpRequest> | undefined
  const response = new Promise<{ status: number, headers: IncomingHttpHeaders, body: string }>((resolve, reject) => {
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-length': String(total) }
    }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
      res.on('error', reject)
    })
    request.on('error', reject)
    request.flushHeaders()
    request.write(first)
    pending = request
  })
  // Keep an unhandled rejection from surfacing before `finish` is awaited.
  response.catch(() => {})
  return {
    finish (rest: string) {
      pending!.end(rest)
      return response
    }
  }
}

export interface IdleConnection {
  /** Resolves when the server closes the connection. */
  closed: Promise<void>
  destroy (): void
}

/**
 * Opens a connection, has one keep-alive request (GET /healthz) answered on it, and leaves it idle:
 * a client's pooled connection between two requests.
 */
export function idleConnection (url: string): Promise<IdleConnection> {
  const { hostname, port, host } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    let received = ''
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (chunk: string) => {
      received += chunk
      if (received.includes('{"status":"ok"}')) resolve({ closed, destroy: () => socket.destroy() })
    })
    socket.once('close', () => reject(new Error(`closed before the response: ${JSON.stringify(received)}`)))
    socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n\r\n`)
  })
}

/** `node server.mjs <args>` (the TypeScript entry here) with `overrides`, run to its end: its exit code and output. */
export async function runEntry (args: string[], overrides: EnvOverrides = {}) {
  const child = spawn(process.execPath, [...NODE_ARGS, SERVER_ENTRY, ...args], { env: serverEnv(overrides), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}
