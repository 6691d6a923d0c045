import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { systemClock } from '../../plugins/http/clock.js'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { EndpointSender, WEBHOOK_USER_AGENT } from '../../plugins/webhooks/delivery/attempt.js'
import { startReceiver, type Received } from '../helpers/receiver.js'
import { startServer } from '../helpers/server-process.js'
import { eventually, newSecret, verifyDelivery } from '../helpers/webhooks.js'

// What a receiver's operator needs to know, as docs/webhooks.md says it: the User-Agent to expect,
// and how the service trusts a receiver whose certificate comes from a private CA.

const page = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8')
const LOOPBACK = parseNetworks(['127.0.0.0/8'], 'test')

const deliver = async (url: string) => {
  const sender = new EndpointSender(new URL(url), LOOPBACK, 5000, 1, systemClock)
  try {
    return await sender.send({ 'content-type': 'application/json' }, '{}')
  } finally {
    sender.close()
  }
}

t.test('a delivery carries the User-Agent docs/webhooks.md names', async (t) => {
  t.ok(page.includes(`\`user-agent: ${WEBHOOK_USER_AGENT}\``), 'docs/webhooks.md names it')
  const receiver = await startReceiver(t)
  t.match(await deliver(receiver.url), { outcome: 'success' })
  t.equal(receiver.received[0].headers['user-agent'], WEBHOOK_USER_AGENT)
})

/** A CA of our own and a certificate it signed for 127.0.0.1, made with openssl. */
function privateCa (t: Test) {
  const dir = t.testdir({ 'san.ext': 'subjectAltName=IP:127.0.0.1\n' })
  const file = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=plant-store test CA')
  openssl('req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=127.0.0.1')
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial',
    '-out', file('server.pem'), '-days', '2', '-extfile', file('san.ext'))
  return { ca: file('ca.pem'), key: readFileSync(file('server.key')), cert: readFileSync(file('server.pem')) }
}

t.test('a receiver behind a private CA: refused without NODE_EXTRA_CA_CERTS, delivered with it, as docs/webhooks.md says', async (t) => {
  t.match(page, /`NODE_EXTRA_CA_CERTS=[^`]+ node dist\/server\.mjs`/, 'docs/webhooks.md shows how')
  const { ca, key, cert } = privateCa(t)
  const received: Received[] = []
  const server = createServer({ key, cert }, (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      response.end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  // This test process was started without the CA: its certificate cannot be verified.
  t.match(await deliver(url), { outcome: 'network', error: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
  t.equal(received.length, 0, 'nothing sent to an unverified receiver')
  const secret = newSecret()
  const service = await startServer(t, {
    API_TOKENS: 'token', NODE_EXTRA_CA_CERTS: ca, WEBHOOK_URL: url, WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8'
  })
  const created = await fetch(`${service.url}/plants`, {
    method: 'POST', headers: { authorization: 'Bearer token', 'content-type': 'application/json' }, body: '{"id":1,"name":"fern"}'
  })
  t.equal(created.status, 200)
  t.ok(await eventually(() => received.length === 1, 30_000), 'the service, given the CA, delivered the event')
  t.doesNotThrow(() => verifyDelivery(secret, received[0].headers, received[0].body))
})
