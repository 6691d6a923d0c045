import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { listening, TOKEN } from '../helpers/app.js'

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

function splitResponse (raw: string) {
  const [head, body] = raw.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), head, body: JSON.parse(body) }
}

t.test('an oversized header is answered 431 in the Error shape, not with Node\'s empty default', async (t) => {
  const { port } = await listening(t)
  const raw = await rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`)
  const { status, head, body } = splitResponse(raw)
  t.equal(status, 431)
  t.match(head, /content-type: application\/json/i)
  t.same(body, { error: 431, message: 'Request header fields too large' })
})

t.test('bytes that are not HTTP are answered 400 in the Error shape', async (t) => {
  const { port } = await listening(t)
  const { status, body } = splitResponse(await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n'))
  t.equal(status, 400)
  t.same(body, { error: 400, message: 'Malformed HTTP request' })
})

t.test('a client that hangs up mid-request leaves the server serving', async (t) => {
  const { port } = await listening(t)
  const socket = connect(port, '127.0.0.1')
  socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id"')
  socket.destroy()
  const response = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(response.status, 200)
})

/** Status, Content-Type and parsed body of a raw answer that must be in the Error shape. */
function errorShaped (raw: string) {
  const { status, head, body } = splitResponse(raw)
  return { status, json: /\r\ncontent-type: application\/json/i.test(head), body }
}

t.test('an expectation other than 100-continue is answered 417 in the Error shape, nothing stored', async (t) => {
  const { port, store } = await listening(t)
  const body = '{"id":1,"name":"expected"}'
  const raw = await rawExchange(port, `POST /plants HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nAuthorization: Bearer ${TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  t.same(errorShaped(raw), { status: 417, json: true, body: { error: 417, message: 'Only the expectation 100-continue is supported' } })
  t.same(await store.list({ limit: 10 }), [], 'nothing stored')
})

t.test('an HTTP/1.1 request without Host is answered 400 in the Error shape; HTTP/1.0 needs none', async (t) => {
  const { port } = await listening(t)
  t.same(errorShaped(await rawExchange(port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')),
    { status: 400, json: true, body: { error: 400, message: 'An HTTP/1.1 request must have a Host header' } })
  const old = await rawExchange(port, 'GET /healthz HTTP/1.0\r\n\r\n')
  t.match(old, /^HTTP\/1\.1 200 [^]*\{"status":"ok"\}$/, 'HTTP/1.0 without Host: 200')
})

t.test('CONNECT is answered 404 in the Error shape, like any method the service does not have', async (t) => {
  const { port } = await listening(t)
  t.same(errorShaped(await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')),
    { status: 404, json: true, body: { error: 404, message: 'Route not found' } })
})

t.test('a path that leaves /documentation/static is 404 in the Error shape, however it is spelled', async (t) => {
  const { port } = await listening(t)
  for (const path of ['../../package.json', '%2e%2e/%2e%2e/package.json', '..%2f..%2fpackage.json', 'x/../../index.html', 'x//index.html']) {
    const raw = await rawExchange(port, `GET /documentation/static/${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.same(errorShaped(raw), { status: 404, json: true, body: { error: 404, message: 'Route not found' } }, path)
  }
  const page = await fetch(`http://127.0.0.1:${port}/documentation/static/index.html`)
  t.equal(page.status, 200, 'the files inside are still served')
  await page.body?.cancel()
})
