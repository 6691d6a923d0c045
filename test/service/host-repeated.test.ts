import t from 'tap'
import { HOST_REPEATED } from '../../service/edge/http-protocol.js'
import { build } from '../helpers/app.js'
import { exchange } from '../helpers/exchange.js'

t.test('a request with two Host headers is 400 in the Error shape, and its connection closed (RFC 9112)', async (t) => {
  // A short keep-alive: a connection the service wrongly keeps still ends, and the test fails rather than waits.
  const { app } = await build(t, {}, { keepAliveTimeout: 1000 })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = app.server.address() as { port: number }
  const { answer } = await exchange(port.port, 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n')
  const [head, body] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(head, /\r\nconnection: close(\r\n|$)/i, 'Connection: close')
  t.same(JSON.parse(body), { error: 400, message: HOST_REPEATED })
  const single = await exchange(port.port, 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n')
  t.match(single.answer, /^HTTP\/1\.1 200 OK\r\n/, 'one Host is fine')
})
