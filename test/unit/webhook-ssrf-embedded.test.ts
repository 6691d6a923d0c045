import t from 'tap'
import { systemClock } from '../../plugins/http/clock.js'
import { parseNetworks } from '../../plugins/webhooks/settings.js'
import { EndpointSender } from '../../plugins/webhooks/delivery/attempt.js'
import { isAllowedAddress } from '../../plugins/webhooks/delivery/ssrf.js'
import { startReceiver } from '../helpers/receiver.js'

// Every IPv6 form that carries an IPv4 address is judged by the rules of that IPv4 address: a
// loopback or private one hidden in an IPv6 literal is refused before any connection is tried.

/** The IPv6 forms of an IPv4 address a.b.c.d, as [form, literal]. */
function embeddings (ipv4: string): Array<[string, string]> {
  const [a, b, c, d] = ipv4.split('.').map(Number)
  const hex = (high: number, low: number) => ((high << 8) | low).toString(16)
  const inverted = (high: number, low: number) => (0xffff ^ ((high << 8) | low)).toString(16)
  return [
    ['mapped', `::ffff:${ipv4}`],
    ['compatible, dotted', `::${ipv4}`],
    ['compatible, hex', `::${hex(a, b)}:${hex(c, d)}`],
    ['translated', `::ffff:0:${ipv4}`],
    ['NAT64', `64:ff9b::${ipv4}`],
    ['6to4', `2002:${hex(a, b)}:${hex(c, d)}::1`],
    // Teredo: server 65.54.227.120, flags, port, then the client's address with every bit inverted.
    ['Teredo', `2001:0:4136:e378:8000:63bf:${inverted(a, b)}:${inverted(c, d)}`]
  ]
}

const LOOPBACK = parseNetworks(['127.0.0.0/8'], 'test')

t.test('an IPv4 address inside an IPv6 one is judged as that IPv4 address', async (t) => {
  for (const ipv4 of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.1', '0.0.0.0', '100.64.0.1']) {
    for (const [form, address] of embeddings(ipv4)) t.notOk(isAllowedAddress(address, []), `${form} ${address} (${ipv4}): refused`)
  }
  for (const [form, address] of embeddings('93.184.216.34')) t.ok(isAllowedAddress(address, []), `${form} ${address}: public, allowed`)
  for (const [form, address] of embeddings('127.0.0.1')) t.ok(isAllowedAddress(address, LOOPBACK), `${form} ${address}: allowed with 127.0.0.0/8`)
  for (const [form, address] of embeddings('10.1.2.3')) t.notOk(isAllowedAddress(address, LOOPBACK), `${form} ${address}: 127.0.0.0/8 does not allow 10.1.2.3`)
  t.notOk(isAllowedAddress('64:ff9b:1::7f00:1', []), 'the local-use NAT64 prefix, where the operator places the IPv4 address: refused')
  t.notOk(isAllowedAddress('::1', []), '::1 is loopback')
  t.ok(isAllowedAddress('::1', parseNetworks(['::1'], 'test')), '::1 allowed by name')
  t.ok(isAllowedAddress('2002:7f00:1::1', parseNetworks(['2002::/16'], 'test')), 'an allowed IPv6 network allows its addresses as written')
})

t.test('a webhook URL with such a literal is not connected to: the listener on 127.0.0.1 sees nothing', async (t) => {
  const { port, connections } = await startReceiver(t)
  const send = async (host: string, allowed: typeof LOOPBACK) => {
    const sender = new EndpointSender(new URL(`http://${host}:${port}/hook`), allowed, 5000, 1, systemClock)
    try {
      return await sender.send({ 'content-type': 'application/json' }, '{}')
    } finally {
      sender.close()
    }
  }
  for (const [form, address] of embeddings('127.0.0.1')) {
    t.match(await send(`[${address}]`, []), { outcome: 'blocked', error: 'blocked' }, `${form} [${address}]: blocked`)
  }
  t.equal(connections(), 0, 'no connection reached the listener')
  // The allow-list still lets the loopback through, written as IPv4 or as IPv4-mapped IPv6.
  t.match(await send('127.0.0.1', LOOPBACK), { outcome: 'success', status: 200 })
  t.match(await send('[::ffff:127.0.0.1]', LOOPBACK), { outcome: 'success', status: 200 })
  t.equal(connections(), 2, 'both allowed requests connected')
})
