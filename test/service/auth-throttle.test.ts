import Fastify from 'fastify'
import t from 'tap'
import { AuthThrottledError } from '../../plugins/http/errors.js'
import { DEFAULT_AUTH_FAILURE_LIMIT } from '../../plugins/http/limit-options.js'
import { addressKey, WindowCounter } from '../../plugins/auth/window-counter.js'
import { appOptions } from '../../service/config/app-options.js'
import { loadConfig, MIN_PRODUCTION_TOKEN_LENGTH, readTokens } from '../../service/config/index.js'
import plantStore from '../../src/plugin.js'
import { AUTH, build, TOKEN } from '../helpers/app.js'
import { exitWithin, linesOf, spawnServer, START_TIMEOUT } from '../helpers/server-process.js'
import { eventually } from '../helpers/webhooks.js'

// The subtests are independent: the server process one starts overlaps the others.
t.jobs = 8

const THROTTLED = new AuthThrottledError().message
const guess = (n: number) => ({ authorization: `Bearer guess-${n}` })

// Alone, before the others run at once: its failures must fall within a 300 ms window.
t.test('requests without a token checked are not counted; the window ends; false turns the limit off', { buffered: false }, async (t) => {
  const { app } = await build(t, { authFailureLimit: { max: 2, timeWindow: 300 } })
  for (let n = 0; n < 5; n++) t.equal((await app.inject({ url: '/plants' })).statusCode, 401, 'no token at all: 401')
  t.equal((await app.inject({ url: '/plants?access_token=x', headers: AUTH })).statusCode, 401, 'a token in the query is refused unchecked')
  t.equal((await app.inject({ url: '/plants', headers: { authorization: 'Basic eDp5' } })).statusCode, 401, 'another scheme too')
  t.equal((await app.inject({ url: '/plants', headers: guess(1) })).statusCode, 401)
  t.equal((await app.inject({ url: '/plants', headers: guess(2) })).statusCode, 401)
  t.equal((await app.inject({ url: '/plants', headers: guess(3) })).statusCode, 429, 'two failures: throttled')
  // Guesses within the window are refused 429 and count in it; the first after it opens a new one.
  const afterTheWindow = async () => (await app.inject({ url: '/plants', headers: guess(4) })).statusCode === 401
  t.ok(await eventually(afterTheWindow), 'after the window: 401')

  const { app: open } = await build(t, { authFailureLimit: false })
  for (let n = 0; n < DEFAULT_AUTH_FAILURE_LIMIT.max + 5; n++) await open.inject({ url: '/plants', headers: guess(n) })
  t.equal((await open.inject({ url: '/plants', headers: guess(0) })).statusCode, 401, 'no limit')
})

// Reported: wrong tokens were never counted; unlimited guesses got 401.
t.test('past the documented number of failed authentications, an address gets 429 with Retry-After for a wrong token', async (t) => {
  const { app } = await build(t)
  const { max } = DEFAULT_AUTH_FAILURE_LIMIT
  for (let n = 0; n < max; n++) t.equal((await app.inject({ url: '/plants', headers: guess(n) })).statusCode, 401, `guess ${n + 1}`)
  const refused = await app.inject({ url: '/plants', headers: guess(max) })
  t.equal(refused.statusCode, 429, `guess ${max + 1} is throttled`)
  t.same(refused.json(), { error: 429, message: THROTTLED })
  const wait = Number(refused.headers['retry-after'])
  t.ok(wait > 0 && wait <= DEFAULT_AUTH_FAILURE_LIMIT.timeWindow / 1000, `Retry-After: ${wait}`)
  const elsewhere = await app.inject({ url: '/plants', headers: guess(max + 1), remoteAddress: '10.0.0.2' })
  t.equal(elsewhere.statusCode, 401, 'another address is not affected')
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'the probes are not affected')
})

t.test('the host\'s authenticate is throttled the same way when the host asks', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(plantStore, {
    store: 'memory:',
    authenticate: (request) => request.headers['x-user'] === 'ada' && 'ada',
    authFailureLimit: { max: 1, timeWindow: 60_000 }
  })
  t.equal((await host.inject({ url: '/plants', headers: { 'x-user': 'eve' } })).statusCode, 401)
  t.equal((await host.inject({ url: '/plants', headers: { 'x-user': 'eve' } })).statusCode, 429)
})

t.test('addresses are counted by IPv4 address and by IPv6 /64', async (t) => {
  t.equal(addressKey('192.0.2.7'), '192.0.2.7')
  t.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7', 'an IPv4-mapped address is its IPv4 address')
  t.equal(addressKey('2001:db8:0:1:2:3:4:5'), '2001:db8:0:1::/64')
  t.equal(addressKey('2001:0DB8::1'), '2001:db8:0:0::/64', 'compressed and upper-case')
  t.equal(addressKey('2001:db8:0:1::'), '2001:db8:0:1::/64')
  t.equal(addressKey('::1'), '0:0:0:0::/64')
  t.equal(addressKey('::'), '0:0:0:0::/64')
})

t.test('the counter keeps at most its capacity of keys, forgetting the oldest', async (t) => {
  const counter = new WindowCounter(60_000, 2)
  counter.hit('a')
  counter.hit('b')
  counter.hit('c')
  t.equal(counter.peek('a'), undefined, 'the oldest is forgotten')
  t.equal(counter.peek('c')?.count, 1)
  t.equal(counter.hit('b').count, 2)
})

t.test('AUTH_FAILURE_MAX and AUTH_FAILURE_WINDOW set the limit; 0 turns it off', async (t) => {
  const options = (env: Record<string, string>) => appOptions(loadConfig(env), [TOKEN])
  const { app } = await build(t, options({ AUTH_FAILURE_MAX: '1', AUTH_FAILURE_WINDOW: '60000' }))
  t.equal((await app.inject({ url: '/plants', headers: guess(1) })).statusCode, 401)
  t.equal((await app.inject({ url: '/plants', headers: guess(2) })).statusCode, 429)
  const { app: open } = await build(t, options({ AUTH_FAILURE_MAX: '0' }))
  for (let n = 0; n < DEFAULT_AUTH_FAILURE_LIMIT.max + 1; n++) await open.inject({ url: '/plants', headers: guess(n) })
  t.equal((await open.inject({ url: '/plants', headers: guess(0) })).statusCode, 401)
})

// Reported: API_TOKENS=ab started in production.
t.test('NODE_ENV=production refuses a token too short to resist guessing, with one line', async (t) => {
  t.throws(() => readTokens({ NODE_ENV: 'production', API_TOKENS: 'x'.repeat(MIN_PRODUCTION_TOKEN_LENGTH) + ',ab' }),
    /^Invalid configuration: API_TOKENS entry 2 is shorter than 16 characters, which NODE_ENV=production refuses/)
  t.same(readTokens({ API_TOKENS: 'ab' }), ['ab'], 'outside production a short token is a developer\'s choice')
  const server = spawnServer(t, { NODE_ENV: 'production', API_TOKENS: 'ab' })
  const exit = await exitWithin(server, START_TIMEOUT)
  t.not(exit.code, 0, 'exits non-zero')
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, `one line: ${server.stderr()}`)
  t.match(lines[0], /API_TOKENS entry 1 is shorter than 16 characters/)
  t.notMatch(lines[0], /\bab\b/, 'the token itself is not shown')
})
