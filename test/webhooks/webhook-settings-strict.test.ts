import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig, MAX_SETTING_FILE_BYTES, readWebhooks } from '../../service/config/index.js'
import { checkOptions } from '../../src/options.js'
import { exitWithin, linesOf, spawnServer, START_TIMEOUT } from '../helpers/server-process.js'

// The webhook settings take nothing they would not use: a file that is not a bounded regular
// file, a key no endpoint has, a setting that applies to no endpoint and an empty list are refused
// at start with one line, rather than ignored.

const SECRET = `whsec_${randomBytes(32).toString('base64')}`
const ENDPOINT = { name: 'a', url: 'http://127.0.0.1:9/hook', secrets: [SECRET] }
const webhooksOf = (env: Record<string, string>) => readWebhooks(loadConfig({ DATABASE_URL: 'memory:', ...env }))
const FILE_FIX = `set it to a readable regular file holding a JSON array of endpoints {name, url, secrets, events}, at most ${MAX_SETTING_FILE_BYTES} bytes`

/** The service started with `env`: it must exit 1 at once, with exactly `line` on stderr. */
async function refusedAtStart (t: Test, env: Record<string, string>, line: string | RegExp) {
  const server = spawnServer(t, { API_TOKENS: 'token', ...env })
  t.same(await exitWithin(server, START_TIMEOUT), { code: 1, signal: null }, 'exits 1')
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, `one line: ${server.stderr()}`)
  t.match(lines[0], line)
  t.notMatch(server.stdout(), /Server listening/)
}

// Independent subtests; those that start the service wait on a process of their own: together.
t.jobs = 4

t.test('WEBHOOK_ENDPOINTS_FILE is read as the token file is: a regular file of at most 1 MiB', async (t) => {
  const dir = t.testdir({ 'hooks.json': JSON.stringify([ENDPOINT]) })
  const huge = join(dir, 'huge.json')
  writeFileSync(huge, '[')
  truncateSync(huge, MAX_SETTING_FILE_BYTES + 1)
  for (const [file, problem] of [['/dev/zero', 'is not a regular file'], [dir, 'is not a regular file'],
    [huge, `is larger than ${MAX_SETTING_FILE_BYTES} bytes`], [join(dir, 'nope.json'), 'cannot be read (ENOENT)']]) {
    t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: file }), {
      message: `Invalid configuration: WEBHOOK_ENDPOINTS_FILE ${problem}; ${FILE_FIX}.`
    }, `${file}: ${problem}`)
  }
  t.same(webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'hooks.json') })!.endpoints, [ENDPOINT], 'a regular file is read')
})

t.test('WEBHOOK_ENDPOINTS_FILE=/dev/zero: the service exits at once with one line', async (t) => {
  await refusedAtStart(t, { WEBHOOK_ENDPOINTS_FILE: '/dev/zero' }, `Invalid configuration: WEBHOOK_ENDPOINTS_FILE is not a regular file; ${FILE_FIX}.`)
})

t.test('a named pipe as WEBHOOK_ENDPOINTS_FILE: the service exits at once with one line, it does not wait for a writer', async (t) => {
  const fifo = join(t.testdir(), 'hooks.fifo')
  execFileSync('mkfifo', [fifo])
  await refusedAtStart(t, { WEBHOOK_ENDPOINTS_FILE: fifo }, `Invalid configuration: WEBHOOK_ENDPOINTS_FILE is not a regular file; ${FILE_FIX}.`)
})

t.test('a key an endpoint does not have is refused, naming the entry and the key', async (t) => {
  const dir = t.testdir({
    'typo.json': JSON.stringify([ENDPOINT, { ...ENDPOINT, name: 'b', event: ['plant.deleted'] }]),
    'empty.json': '[]',
    'not-json.json': `[{"name":"a","secrets":["${SECRET}"],}]`
  })
  t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'typo.json') }), {
    message: 'Invalid configuration: WEBHOOK_ENDPOINTS_FILE (entry 2) holds the unknown key "event"; an endpoint takes only name, url, secrets, events.'
  })
  t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'empty.json') }), {
    message: 'Invalid configuration: WEBHOOK_ENDPOINTS_FILE holds no endpoint; write a JSON array of endpoints {name, url, secrets, events}, or unset it to turn webhooks off.'
  }, 'an empty list does not turn webhooks off without a word')
  const notJson = t.throws(() => webhooksOf({ WEBHOOK_ENDPOINTS_FILE: join(dir, 'not-json.json') }), {
    message: 'Invalid configuration: WEBHOOK_ENDPOINTS_FILE does not hold valid JSON; write a JSON array of endpoints {name, url, secrets, events}.'
  }) as Error
  t.notMatch(notJson.message, /whsec_/, 'the parser\'s message, which quotes the file, is not shown')
})

t.test('the service refuses a misspelt key in the endpoints file with that one line', async (t) => {
  const file = join(t.testdir({ 'hooks.json': JSON.stringify([{ ...ENDPOINT, event: ['plant.deleted'] }]) }), 'hooks.json')
  await refusedAtStart(t, { WEBHOOK_ENDPOINTS_FILE: file },
    'Invalid configuration: WEBHOOK_ENDPOINTS_FILE (entry 1) holds the unknown key "event"; an endpoint takes only name, url, secrets, events.')
})

t.test('settings that apply to no endpoint are refused, not ignored', async (t) => {
  const file = join(t.testdir({ 'hooks.json': JSON.stringify([ENDPOINT]) }), 'hooks.json')
  const eventsFix = 'set the events of each endpoint of WEBHOOK_ENDPOINTS_FILE in its "events", or unset WEBHOOK_EVENTS'
  const envs: Array<Record<string, string>> = [{ WEBHOOK_ENDPOINTS_FILE: file, WEBHOOK_EVENTS: 'plant.deleted' }, { WEBHOOK_EVENTS: 'plant.created' }]
  for (const env of envs) {
    t.throws(() => webhooksOf(env), {
      message: `Invalid configuration: WEBHOOK_EVENTS is set without WEBHOOK_URL, the only endpoint it applies to; ${eventsFix}.`
    }, JSON.stringify(env))
  }
  for (const [setting, value] of [['WEBHOOK_RETRY_SCHEDULE', '5s'], ['WEBHOOK_TIMEOUT', '2s'], ['WEBHOOK_ALLOWED_NETWORKS', '10.0.0.0/8'],
    ['WEBHOOK_DISABLE_AFTER', '1h'], ['WEBHOOK_RETENTION', '1h']]) {
    t.throws(() => webhooksOf({ [setting]: value }), {
      message: `Invalid configuration: ${setting} is set but no webhook endpoint is; set WEBHOOK_URL and WEBHOOK_SECRET, or WEBHOOK_ENDPOINTS_FILE, or unset it.`
    }, `${setting} alone`)
  }
  t.same(webhooksOf({ WEBHOOK_URL: ENDPOINT.url, WEBHOOK_SECRET: SECRET, WEBHOOK_EVENTS: 'plant.deleted', WEBHOOK_ENDPOINTS_FILE: file })!
    .endpoints.map(({ name, events }) => [name, events]), [['default', ['plant.deleted']], ['a', undefined]],
  'with WEBHOOK_URL, WEBHOOK_EVENTS names its events, and the file\'s endpoints keep their own')
})

t.test('the plugin option refuses unknown keys too, saying which keys there are', async (t) => {
  const register = (webhooks: unknown) => () => checkOptions({ tokens: ['t'], store: 'memory:', webhooks })
  t.throws(register({ endpoints: [{ ...ENDPOINT, event: ['plant.deleted'] }] }), {
    message: 'plant-store: option webhooks.endpoints.event is unknown: webhooks.endpoints takes name, url, secrets, events'
  })
  t.throws(register({ endpoints: [ENDPOINT], retryschedule: [1000] }), {
    message: /^plant-store: option webhooks\.retryschedule is unknown: webhooks takes endpoints, retrySchedule, timeout, /
  })
  t.throws(register({ endpoints: [{ ...ENDPOINT, secrets: [] }] }), {
    message: /^plant-store: option webhooks\.endpoints\.secrets is invalid: it must be a non-empty array of secrets/
  }, 'an entry\'s own option is described')
  t.throws(register({ endpoints: [] }), { message: /^plant-store: option webhooks\.endpoints is invalid: it must be a non-empty array of endpoints/ })
})
