import t from 'tap'
import { loadConfig, trustProxy } from '../../service/config/index.js'
import { AUTH, build } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'

// The subtests are independent: the server process one starts overlaps the others.
t.jobs = 8

const TOKEN = 'test-token-trust-proxy-0123'
const guess = (n: number) => `Bearer guess-${n}`

t.test('TRUST_PROXY takes true, addresses, CIDRs and named networks; anything else is one line naming it', async (t) => {
  t.equal(trustProxy(loadConfig({})), false, 'unset: no proxy is believed')
  t.equal(trustProxy(loadConfig({ TRUST_PROXY: ' ' })), false)
  t.equal(trustProxy(loadConfig({ TRUST_PROXY: 'false' })), false)
  t.equal(trustProxy(loadConfig({ TRUST_PROXY: 'true' })), true)
  t.same(trustProxy(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,uniquelocal' })),
    ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'uniquelocal'])
  for (const [value, problem] of [
    ['2', '(2) is a hop count, which Fastify ignores'],
    ['proxy.example', 'holds "proxy.example", which is not an IP address'],
    ['10.0.0.0/33', 'holds "10.0.0.0/33"'],
    ['::1/129', 'holds "::1/129"'],
    ['10.0.0.0/8/8', 'holds "10.0.0.0/8/8"'],
    ['10.0.0.1,', 'holds ""'],
    ['10.0.0.0/x', 'holds "10.0.0.0/x"']
  ]) {
    t.throws(() => loadConfig({ TRUST_PROXY: value }), {
      name: 'ConfigError',
      message: new RegExp(`^Invalid configuration: TRUST_PROXY ${problem.replace(/[()/]/g, '\\$&')}.*; set TRUST_PROXY to the addresses or CIDRs of your proxies[^\\n]*\\.$`)
    }, value)
  }
})

t.test('behind a trusted proxy each client is counted apart; X-Forwarded-For from anyone else is not believed', async (t) => {
  const proxy = '10.0.0.1'
  const { app } = await build(t, {}, { trustProxy: trustProxy({ TRUST_PROXY: proxy }) })
  const viaProxy = (client: string, authorization: string, remoteAddress = proxy) =>
    app.inject({ url: '/plants', remoteAddress, headers: { authorization, 'x-forwarded-for': client } }).then(({ statusCode }) => statusCode)
  for (let n = 0; n < 10; n++) await viaProxy('203.0.113.1', guess(n))
  t.equal(await viaProxy('203.0.113.1', guess(10)), 429, 'the guessing client is throttled')
  t.equal(await viaProxy('203.0.113.2', guess(0)), 401, 'another client behind the same proxy is not')
  t.equal(await viaProxy('198.51.100.9, 203.0.113.2', guess(1)), 401, 'what a client wrote before the proxy\'s entry is not believed')
  t.equal(await viaProxy('203.0.113.1', AUTH.authorization), 200)
  for (let n = 0; n < 11; n++) await viaProxy(`192.0.2.${n}`, guess(n), '172.16.0.5')
  t.equal(await viaProxy('192.0.2.99', guess(0), '172.16.0.5'), 429, 'a peer that is not the proxy is counted by its own address, whatever it writes')
})

t.test('the service reads TRUST_PROXY: the throttle and the log key on the client behind the proxy', async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN, TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'debug' })
  const send = async (client: string, authorization: string) => {
    const response = await fetch(`${server.url}/plants`, { headers: { authorization, 'x-forwarded-for': client } })
    await response.arrayBuffer()
    return response.status
  }
  for (let n = 0; n < 10; n++) t.equal(await send('203.0.113.1', guess(n)), 401)
  t.equal(await send('203.0.113.1', guess(10)), 429, 'the client with wrong tokens is throttled')
  t.equal(await send('203.0.113.2', guess(0)), 401, 'another client of the proxy is not')
  t.equal(await send('203.0.113.2', `Bearer ${TOKEN}`), 200)
  const logged = await server.waitForLog((line) => line.msg === 'request completed' && line.statusCode === 200)
  t.equal(logged.remoteAddress, '203.0.113.2', 'the log names the client')
})
