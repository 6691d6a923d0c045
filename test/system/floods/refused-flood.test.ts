/**
 * A flood that needs no token, against a real server process: each flood socket sends
 * a request that cannot succeed (an unknown route, no token, a wrong token) announcing a large body,
 * then drips one byte of it now and then, and reconnects when closed. Such a request is answered at
 * once and its connection let go, so fresh legitimate requests keep being answered.
 */
import { spawn } from 'node:child_process'
import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { pool } from '../../helpers/load.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-refused-flood'
// Scaled down from the report (10,400 sockets against ~480 connections): the same ratio of
// flood sockets to connections, small enough to run in seconds.
const MAX_CONNECTIONS = 40
const FLOOD = 10 * MAX_CONNECTIONS
const DRIP_INTERVAL = 1000
// A flood socket the server closed reconnects after this pause: up to 4,000 connections a second.
const RECONNECT_PAUSE = 100
const LEGITIMATE = 40
const ANSWER_TIMEOUT = 3000

const REFUSED_HEADS = [
  'POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
  'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
  'POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n'
]

/**
 * The flood, run in a process of its own (`node -e`), as an attacker is another machine: `count`
 * sockets, each reconnecting when closed. Plain JavaScript with its own require.
 */
function floodMain (port: number, count: number, heads: string[], dripInterval: number, reconnectPause: number) {
  const { connect } = require('node:net') as typeof import('node:net')
  const open = (index: number) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.resume()
    socket.once('connect', () => socket.write(heads[index % heads.length]))
    const drip = setInterval(() => socket.write('['), dripInterval)
    socket.once('close', () => {
      clearInterval(drip)
      setTimeout(() => open(index), reconnectPause)
    })
  }
  for (let index = 0; index < count; index++) open(index)
}

function refusedFlood (t: Test, url: string, count: number) {
  const args = [Number(new URL(url).port), count, REFUSED_HEADS, DRIP_INTERVAL, RECONNECT_PAUSE].map((arg) => JSON.stringify(arg))
  const child = spawn(process.execPath, ['-e', `(${floodMain.toString()})(${args.join(', ')})`], { stdio: 'ignore' })
  t.teardown(() => { child.kill('SIGKILL') })
  return () => child.kill('SIGKILL')
}

/** One request on a fresh connection; resolves whether it was answered with `status` in time. */
function answered (url: string, method: string, path: string, status: number, body?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, connection: 'close' }
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
    const sent = request(`${url}${path}`, { method, headers, agent: false, timeout: ANSWER_TIMEOUT }, (response) => {
      response.resume()
      response.on('end', () => resolve(response.statusCode === status))
      response.on('error', () => resolve(false))
    })
    sent.on('timeout', () => sent.destroy())
    sent.on('error', () => resolve(false))
    sent.end(body)
  })
}

t.test(`${FLOOD} flood sockets of refused requests against MAX_CONNECTIONS=${MAX_CONNECTIONS}: fresh legitimate requests are answered`, async (t) => {
  // Here the flood and the legitimate client share one address, which the failed-authentication
  // limit would rightly refuse as a whole: it is off, to measure connections alone.
  const server = await startServer(t, { API_TOKENS: TOKEN, MAX_CONNECTIONS: String(MAX_CONNECTIONS), AUTH_FAILURE_MAX: '0' })
  const stop = refusedFlood(t, server.url, FLOOD)
  // Every connection is taken by the flood, and its first drips have come.
  await sleep(1500)

  let ok = 0
  await pool(LEGITIMATE, 4, async (index) => {
    const fine = index % 2 === 0
      ? await answered(server.url, 'GET', '/healthz', 200)
      : await answered(server.url, 'POST', '/plants', 200, `{"id":${index},"name":"legitimate"}`)
    if (fine) ok++
  })
  stop()
  t.comment(`${ok} of ${LEGITIMATE} fresh legitimate requests answered (${(100 * ok / LEGITIMATE).toFixed(1)} %)`)
  t.ok(ok / LEGITIMATE >= 0.95, 'at least 95 % of them are answered')
  t.ok(server.child.exitCode === null && server.child.signalCode === null, 'the process is still running')
})
