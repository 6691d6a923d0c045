import Fastify from 'fastify'
import t from 'tap'
import { AuthThrottledError } from '../../plugins/http/errors.js'
import { DEFAULT_AUTH_FAILURE_LIMIT } from '../../plugins/http/limit-options.js'
import { WindowCounter } from '../../plugins/auth/window-counter.js'
import plantStore from '../../src/plugin.js'
import { AUTH, build, TOKEN } from '../helpers/app.js'
import { listeningService } from '../helpers/client.js'
import { rawRequest } from '../helpers/server-process.js'

const THROTTLED = new AuthThrottledError().message
const guess = (n: number) => ({ authorization: `Bearer guess-${n}` })
const { max } = DEFAULT_AUTH_FAILURE_LIMIT

t.test('past the limit only a refused token gets 429: a right one from the same address is answered', async (t) => {
  const { app } = await build(t)
  for (let n = 0; n < max; n++) t.equal((await app.inject({ url: '/plants', headers: guess(n) })).statusCode, 401, `guess ${n + 1}`)
  const refused = await app.inject({ url: '/plants', headers: guess(max) })
  t.equal(refused.statusCode, 429, `guess ${max + 1} is throttled`)
  t.same(refused.json(), { error: 429, message: THROTTLED })
  t.ok(Number(refused.headers['retry-after']) > 0, `Retry-After: ${refused.headers['retry-after']}`)
  const right = await app.inject({ url: '/plants', headers: AUTH })
  t.equal(right.statusCode, 200, 'a token that verifies is never refused for failures')
  t.equal((await app.inject({ url: '/plants', headers: guess(max + 1) })).statusCode, 429, 'the next wrong one still is')
})

t.test('a contract probe\'s 401 checks, then its checks with a right token, all pass with the default settings', async (t) => {
  const url = await listeningService(t)
  const { host } = new URL(url)
  const get = (headers: Record<string, string> = {}, path = '/plants') => fetch(url + path, { headers }).then(async (response) => {
    await response.arrayBuffer()
    return response.status
  })
  const refusals: Array<[string, () => Promise<number>]> = [
    ['no Authorization', () => get()],
    ['another scheme', () => get({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` })],
    ['an empty bearer token', () => get({ authorization: 'Bearer ' })],
    ['a bare scheme name', () => get({ authorization: 'Bearer' })],
    ['a token in the query', () => get(AUTH, '/plants?access_token=x')],
    ['two Authorization fields', () => rawRequest(url, ['GET /plants HTTP/1.1', `Host: ${host}`, `Authorization: Bearer ${TOKEN}`, 'Authorization: Bearer x', 'Connection: close'])
      .then(({ status }) => status)],
    ...Array.from({ length: 8 }, (_, n): [string, () => Promise<number>] => [`unknown token ${n + 1}`, () => get({ authorization: `Bearer not-${TOKEN}-${n}` })])
  ]
  for (const [name, check] of refusals) t.equal(await check(), 401, name)
  const statuses = new Map<number, number>()
  for (let n = 0; n < 386; n++) {
    const status = await get(AUTH, n % 2 === 0 ? '/plants' : `/plants?limit=${1 + (n % 50)}`)
    statuses.set(status, (statuses.get(status) ?? 0) + 1)
  }
  t.same(Object.fromEntries(statuses), { 200: 386 }, 'every check with a right token is answered')
})

t.test('10,000 other addresses failing once each do not make a blocked address forget its failures', async (t) => {
  const { app } = await build(t)
  const attacker = '198.51.100.7'
  for (let n = 0; n <= max; n++) await app.inject({ url: '/plants', headers: guess(n), remoteAddress: attacker })
  t.equal((await app.inject({ url: '/plants', headers: guess(0), remoteAddress: attacker })).statusCode, 429, 'blocked')
  for (let n = 0; n < 10_000; n++) {
    await app.inject({ url: '/plants', headers: guess(n), remoteAddress: `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}` })
  }
  t.equal((await app.inject({ url: '/plants', headers: guess(1), remoteAddress: attacker })).statusCode, 429, 'still blocked')
})

t.test('the counter evicts expired windows, then windows under the limit, oldest first, and windows at it last', async (t) => {
  const counter = new WindowCounter(1000, 3, 2)
  counter.hit('blocked', 0)
  counter.hit('blocked', 0)
  for (const key of ['a', 'b', 'c', 'd']) counter.hit(key, 1)
  t.equal(counter.peek('blocked', 2)?.count, 2, 'the window at its limit is kept')
  t.same(['a', 'b', 'c', 'd'].map((key) => counter.peek(key, 2)?.count), [undefined, undefined, 1, 1], 'the oldest under it go first')
  for (const key of ['c', 'd']) counter.hit(key, 3)
  counter.hit('e', 4)
  t.equal(counter.peek('blocked', 4), undefined, 'with all at the limit, the oldest of them goes')
  t.same(['c', 'd', 'e'].map((key) => counter.peek(key, 5)?.count), [2, 2, 1])
  counter.hit('f', 1001)
  t.same(['c', 'd', 'e', 'f'].map((key) => counter.peek(key, 1001)?.count), [undefined, undefined, 1, 1], 'an expired window at the limit goes before an open one under it')

  const unlimited = new WindowCounter(1000, 2)
  for (let n = 0; n < 5; n++) unlimited.hit('busy', 0)
  unlimited.hit('a', 0)
  unlimited.hit('b', 0)
  t.equal(unlimited.peek('busy', 0), undefined, 'without a limit, the oldest goes, whatever its count')
})

t.test('with the host\'s authenticate there is no failure throttle, unless the host asks for one', async (t) => {
  const hostWith = async (options: object) => {
    const host = Fastify()
    t.teardown(() => host.close())
    await host.register(plantStore, { store: 'memory:', authenticate: (request) => request.headers['x-user'] === 'ada' && 'ada', ...options })
    return host
  }
  const host = await hostWith({})
  const statuses = []
  for (let n = 0; n < max * 2; n++) statuses.push((await host.inject({ url: '/plants', headers: { 'x-user': `eve-${n}` } })).statusCode)
  t.same(new Set(statuses), new Set([401]), `${max * 2} refusals, each a 401`)
  t.equal((await host.inject({ url: '/plants', headers: { 'x-user': 'ada' } })).statusCode, 200)

  const asked = await hostWith({ authFailureLimit: { max: 1, timeWindow: 60_000 } })
  t.equal((await asked.inject({ url: '/plants', headers: { 'x-user': 'eve' } })).statusCode, 401)
  t.equal((await asked.inject({ url: '/plants', headers: { 'x-user': 'eve' } })).statusCode, 429, 'the limit the host asked for')
  t.equal((await asked.inject({ url: '/plants', headers: { 'x-user': 'ada' } })).statusCode, 200, 'whom the host accepts is never refused for it')
})
