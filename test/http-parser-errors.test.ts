import { once } from 'node:events'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { build } from './helpers/app.js'

/** Writes raw bytes to a listening app and resolves everything it answers before closing. */
async function rawExchange (port: number, request: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.on('data', (chunk) => { answer += chunk })
  socket.on('error', () => {})
  socket.write(request)
  await once(socket, 'close')
  return answer
}

async function listening (t: Test) {
  const { app } = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return (app.server.address() as AddressInfo).port
}

function splitResponse (raw: string) {
  const [head, body] = raw.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), head, body: JSON.parse(body) }
}

t.test('an oversized header is answered 431 in the Error shape, not with Node\'s empty default', async (t) => {
  const port = await listening(t)
  const raw = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`)
  const { status, head, body } = splitResponse(raw)
  t.equal(status, 431)
  t.match(head, /content-type: application\/json/i)
  t.same(body, { error: 431, message: 'Request header fields too large' })
})

t.test('bytes that are not HTTP are answered 400 in the Error shape', async (t) => {
  const port = await listening(t)
  const { status, body } = splitResponse(await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n'))
  t.equal(status, 400)
  t.same(body, { error: 400, message: 'Malformed HTTP request' })
})

t.test('a client that hangs up mid-request leaves the server serving', async (t) => {
  const port = await listening(t)
  const socket = connect(port, '127.0.0.1')
  socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id"')
  socket.destroy()
  const response = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(response.status, 200)
})
