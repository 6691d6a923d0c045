import { request, createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { BlockedAddressError, checkLiteralHost, guardedLookup, isAllowedAddress } from '../../plugins/webhooks/delivery/ssrf.js'

const LOOPBACK = parseNetworks(['127.0.0.0/8', '::1'], 'test')

t.test('non-public addresses are refused unless allowed', async (t) => {
  for (const address of ['127.0.0.1', '::1', '169.254.169.254', '10.0.0.1', '192.168.1.1', '172.16.0.1', 'fd00::1', 'fe80::1', '0.0.0.0', '::ffff:127.0.0.1', '100.64.0.1']) {
    t.notOk(isAllowedAddress(address, []), `${address} refused`)
  }
  for (const address of ['93.184.216.34', '2606:2800:220:1::1']) t.ok(isAllowedAddress(address, []), `${address} public`)
  t.ok(isAllowedAddress('127.0.0.1', LOOPBACK))
  t.ok(isAllowedAddress('::ffff:127.0.0.1', LOOPBACK), 'an IPv4-mapped address counts as its IPv4')
  t.notOk(isAllowedAddress('10.0.0.1', LOOPBACK))
  t.throws(() => checkLiteralHost(new URL('http://[::1]:9/'), []), BlockedAddressError)
  t.throws(() => checkLiteralHost(new URL('http://169.254.169.254/'), []), BlockedAddressError)
  t.doesNotThrow(() => checkLiteralHost(new URL('http://[::1]:9/'), LOOPBACK))
  t.doesNotThrow(() => checkLiteralHost(new URL('http://localhost/'), []), 'names are checked at lookup')
})

t.test('a name resolving to loopback is blocked at connect time: the listener sees no connection', async (t) => {
  let connections = 0
  const server = createServer((_request, response) => response.end('ok'))
  server.on('connection', () => { connections++ })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const { port } = server.address() as AddressInfo
  const get = (allowed: typeof LOOPBACK, host = 'localhost') => new Promise<number>((resolve, reject) => {
    // family 4: localhost may resolve to ::1 first, where nothing listens.
    request({ host, port, family: 4, lookup: guardedLookup(allowed) as never }, (response) => {
      response.resume()
      resolve(response.statusCode!)
    }).on('error', reject).end()
  })
  await t.rejects(get([]), { code: 'EWEBHOOKBLOCKED' })
  t.equal(connections, 0, 'nothing reached the listener')
  t.equal(await get(LOOPBACK), 200, 'allowed: delivered')
  t.equal(connections, 1)
  await t.rejects(get([], 'no-such-host.invalid'), { code: 'ENOTFOUND' }, 'a failed resolution stays a network error')
})

t.test('with all: true every permitted address is returned', async (t) => {
  const addresses = await new Promise((resolve, reject) => guardedLookup(LOOPBACK)('localhost', { all: true }, (error, result) => error === null ? resolve(result) : reject(error)))
  t.ok(Array.isArray(addresses) && addresses.length > 0)
})
