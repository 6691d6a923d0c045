import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { appOptions } from '../../service/config/app-options.js'
import { ConfigError, loadConfig, readWebhooks } from '../../service/config/index.js'
import { checkOptions } from '../../src/options.js'
import { resolveWebhooks } from '../../plugins/webhooks/settings.js'
import { exitWithin, linesOf, spawnServer, startServer, START_TIMEOUT } from '../helpers/server-process.js'

const secret = (bytes = 32) => `whsec_${randomBytes(bytes).toString('base64')}`
const SECRET = secret()
const OTHER = secret(64)
const webhooksOf = (env: Record<string, string>) => readWebhooks(loadConfig({ DATABASE_URL: 'memory:', ...env }))

// Independent subtests; the one that starts the service waits on a process of its own: alongside the rest.
t.jobs = 9

t.test('no webhook setting: the feature is off, the option absent', async (t) => {
  t.equal(webhooksOf({}), undefined)
  t.equal(appOptions(loadConfig({ DATABASE_URL: 'memory:' }), ['t']).webhooks, undefined)
  t.doesNotThrow(() => checkOptions({ tokens: ['t'], store: 'memory:' }))
})

t.test('WEBHOOK_* settings give one endpoint; a comma-separated secret is a rotation', async (t) => {
  const webhooks = webhooksOf({
    WEBHOOK_URL: 'http://127.0.0.1:9/hook',
    WEBHOOK_SECRET: ` ${SECRET} , ${OTHER}`,
    WEBHOOK_EVENTS: 'plant.created,plant.deleted',
    WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,5s,2m,1h',
    WEBHOOK_TIMEOUT: '2s',
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8, ::1,10.1.2.3',
    WEBHOOK_DISABLE_AFTER: '2h',
    WEBHOOK_RETENTION: '48h'
  })
  t.same(webhooks, {
    endpoints: [{ name: 'default', url: 'http://127.0.0.1:9/hook', secrets: [SECRET, OTHER], events: ['plant.created', 'plant.deleted'] }],
    retrySchedule: [100, 200, 5000, 120_000, 3_600_000],
    timeout: 2000,
    allowedNetworks: ['127.0.0.0/8', '::1', '10.1.2.3'],
    disableAfter: 7_200_000,
    retention: 172_800_000,
    delivery: 'thread'
  })
  t.doesNotThrow(() => checkOptions({ tokens: ['t'], store: 'memory:', webhooks }), 'the plugin takes what the service passes')
  const resolved = resolveWebhooks(webhooks!)
  t.equal(resolved.endpoints[0].keys.length, 2, 'each secret decoded to its key')
  t.equal(resolved.endpoints[0].keys[1].length, 64)
  t.same(resolved.allowedNetworks.map(([address, bits]) => `${address.toString()}/${bits}`), ['127.0.0.0/8', '::1/128', '10.1.2.3/32'])
})

t.test('defaults: plant.created only, Standard Webhooks\' schedule, 15 s timeout, nothing private allowed', async (t) => {
  const webhooks = webhooksOf({ WEBHOOK_URL: 'https://hooks.example.com/x', WEBHOOK_SECRET: SECRET })!
  t.same(webhooks.endpoints[0].events, ['plant.created'])
  const resolved = resolveWebhooks({ endpoints: webhooks.endpoints })
  t.same(resolved.retrySchedule, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5])
  t.same(webhooks.retrySchedule, resolved.retrySchedule)
  t.equal(resolved.timeout, 15_000)
  t.same(resolved.allowedNetworks, [])
  t.same(resolveWebhooks({ endpoints: [{ ...webhooks.endpoints[0], events: ['plant.deleted', 'plant.deleted'] }] }).endpoints[0].events, ['plant.deleted'])
})

t.test('WEBHOOK_ENDPOINTS_FILE adds named endpoints', async (t) => {
  const dir = t.testdir({
    'hooks.json': JSON.stringify([
      { name: 'mirror', url: 'http://10.0.0.1/in', secrets: [SECRET], events: ['plant.created', 'plant.deleted'] },
      { name: 'audit', url: 'https://audit.example/hook', secrets: [OTHER, SECRET] }
    ])
  })
  const webhooks = webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'hooks.json') })!
  t.same(webhooks.endpoints.map((endpoint) => endpoint.name), ['mirror', 'audit'])
  const both = webhooksOf({ WEBHOOK_URL: 'http://127.0.0.1:1/', WEBHOOK_SECRET: SECRET, WEBHOOK_ENDPOINTS_FILE: join(dir, 'hooks.json') })!
  t.same(both.endpoints.map((endpoint) => endpoint.name), ['default', 'mirror', 'audit'])
})

t.test('a bad webhook setting is one line naming the variable, never showing a secret', async (t) => {
  const files = {
    'not-json.json': '[{',
    'object.json': '{}',
    'no-name.json': JSON.stringify([{ url: 'http://x', secrets: [SECRET] }]),
    'bad-entry.json': JSON.stringify([{ name: 'a', url: 'ftp://x', secrets: [SECRET] }]),
    'bad-secret.json': JSON.stringify([{ name: 'a', url: 'http://x', secrets: ['whsec_short'] }]),
    'same-names.json': JSON.stringify([{ name: 'a', url: 'http://x', secrets: [SECRET] }, { name: 'a', url: 'http://y', secrets: [SECRET] }])
  }
  const dir = t.testdir(files)
  const one = { WEBHOOK_URL: 'http://127.0.0.1:9/hook', WEBHOOK_SECRET: SECRET }
  const cases: Array<[string, Record<string, string>]> = [
    ['WEBHOOK_SECRET', { WEBHOOK_URL: 'http://x/' }],
    ['WEBHOOK_URL', { WEBHOOK_SECRET: SECRET }],
    ['WEBHOOK_SECRET', { ...one, WEBHOOK_SECRET: 'whsec_not base64!' }],
    ['WEBHOOK_SECRET', { ...one, WEBHOOK_SECRET: secret(16) }],
    ['WEBHOOK_SECRET', { ...one, WEBHOOK_SECRET: secret(65) }],
    ['WEBHOOK_SECRET', { ...one, WEBHOOK_SECRET: SECRET.slice(6) }],
    ['WEBHOOK_SECRET', { ...one, WEBHOOK_SECRET: ' , ' }],
    ['WEBHOOK_URL', { ...one, WEBHOOK_URL: 'ftp://x/' }],
    ['WEBHOOK_URL', { ...one, WEBHOOK_URL: 'http://user:pw@x/' }],
    ['WEBHOOK_URL', { ...one, WEBHOOK_URL: 'http://[bad/' }],
    ['WEBHOOK_EVENTS', { ...one, WEBHOOK_EVENTS: 'plant.created,plant.eaten' }],
    ['WEBHOOK_EVENTS', { ...one, WEBHOOK_EVENTS: ',' }],
    ['WEBHOOK_RETRY_SCHEDULE', { ...one, WEBHOOK_RETRY_SCHEDULE: '5s,5 minutes' }],
    ['WEBHOOK_RETRY_SCHEDULE', { ...one, WEBHOOK_RETRY_SCHEDULE: '' }],
    ['WEBHOOK_RETRY_SCHEDULE', { ...one, WEBHOOK_RETRY_SCHEDULE: '25d' }],
    ['WEBHOOK_TIMEOUT', { ...one, WEBHOOK_TIMEOUT: '15' }],
    ['WEBHOOK_TIMEOUT', { ...one, WEBHOOK_TIMEOUT: '0s' }],
    ['WEBHOOK_DISABLE_AFTER', { ...one, WEBHOOK_DISABLE_AFTER: '0h' }],
    ['WEBHOOK_RETENTION', { ...one, WEBHOOK_RETENTION: '7 days' }],
    ['WEBHOOK_ALLOWED_NETWORKS', { ...one, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,10.0.0.0/33' }],
    ['WEBHOOK_ALLOWED_NETWORKS', { ...one, WEBHOOK_ALLOWED_NETWORKS: 'localhost' }],
    ...[...Object.keys(files), 'missing.json'].map((file): [string, Record<string, string>] => ['WEBHOOK_ENDPOINTS_FILE', { WEBHOOK_ENDPOINTS_FILE: join(dir, file) }])
  ]
  for (const [variable, env] of cases) {
    const label = JSON.stringify(env)
    const error = t.throws(() => webhooksOf(env), ConfigError, label) as Error
    t.match(error.message, new RegExp(`^Invalid configuration: ${variable}\\b[^\\n]*\\.$`), `${label}: one line naming ${variable}: ${error.message}`)
    t.notMatch(error.message, /whsec_[A-Za-z0-9+/]/, `${label}: no secret in the line`)
  }
})

t.test('the plugin option is checked at registration, naming the option', async (t) => {
  const endpoint = { name: 'a', url: 'http://127.0.0.1/x', secrets: [SECRET] }
  const register = (webhooks: unknown) => () => checkOptions({ tokens: ['t'], store: 'memory:', webhooks })
  t.doesNotThrow(register({ endpoints: [endpoint], retrySchedule: [100, 200], timeout: 500, allowedNetworks: ['127.0.0.0/8'] }))
  t.throws(register({ endpoints: [] }), /option webhooks\.endpoints is invalid/)
  t.throws(register({ endpoints: [{ ...endpoint, events: ['plant.eaten'] }] }), /option webhooks\.endpoints\.events is invalid/)
  t.throws(register({ endpoints: [{ ...endpoint, secrets: ['whsec_AAAA'] }] }), /option webhooks\.endpoints\.0\.secrets is invalid: it is not a valid secret/)
  t.throws(register({ endpoints: [endpoint], allowedNetworks: ['nope'] }), /option webhooks\.allowedNetworks is invalid: it holds "nope"/)
  t.throws(register({ endpoints: [endpoint, endpoint] }), /option webhooks\.endpoints\.1\.name is invalid: it repeats/)
})

t.test('the service exits non-zero with that one line', async (t) => {
  const server = spawnServer(t, { API_TOKENS: 'token', DATABASE_URL: 'memory:', WEBHOOK_URL: 'http://127.0.0.1:9/', WEBHOOK_SECRET: 'whsec_c2hvcnQ=' })
  const exit = await exitWithin(server, START_TIMEOUT)
  t.ok(exit.code !== null && exit.code !== 0, `exits non-zero (${exit.code})`)
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, server.stderr())
  t.match(lines[0], /^Invalid configuration: WEBHOOK_SECRET is not a valid secret/)
  t.notMatch(server.stdout(), /Server listening/)
})

t.test('an unreadable endpoints file names its error code', async (t) => {
  const dir = t.testdir({})
  writeFileSync(join(dir, 'x.json'), '[]')
  t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'nope.json') }), /WEBHOOK_ENDPOINTS_FILE cannot be read \(ENOENT\)/)
  t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'x.json') }), /WEBHOOK_ENDPOINTS_FILE holds no endpoint/, 'an empty array: refused')
})

t.test('WEBHOOK_DELIVERY=only, the alias of API=off: a delivery-only instance, that says once at start how to spell it now', async (t) => {
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(t.testdir({}), 'plants.db')}`, WEBHOOK_URL: 'http://127.0.0.1:9/hook', WEBHOOK_SECRET: SECRET, WEBHOOK_DELIVERY: 'only', API_TOKENS: undefined
  })
  const warnings = server.logs().filter(({ msg }) => String(msg).includes('alias'))
  t.equal(warnings.length, 1, 'one line')
  t.match(warnings[0], { level: 40, msg: 'WEBHOOK_DELIVERY=only is an alias of API=off with WEBHOOK_DELIVERY=thread: set those two instead' }, 'a warning naming the new spelling')
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'it answers /healthz')
  t.equal((await fetch(`${server.url}/plants`, { method: 'POST', body: '{}' })).status, 404, 'no plant route')
})
