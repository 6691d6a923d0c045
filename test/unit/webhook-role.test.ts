/**
 * The service's role, two switches read in one place (service/config/webhooks.ts): API (serve the
 * plant and admin routes, or not: a delivery-only instance) and WEBHOOK_DELIVERY, which is the
 * plugin's webhooks.delivery one to one. WEBHOOK_DELIVERY=only stays an alias of API=off with
 * WEBHOOK_DELIVERY=thread. A pair that cannot work is refused with one line naming the variable.
 */
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { configHints } from '../../service/config/hints.js'
import { ConfigError, loadConfig, readWebhooks, serviceRole } from '../../service/config/index.js'
import { checkOptions } from '../../src/options.js'

const ENDPOINT = { WEBHOOK_URL: 'http://127.0.0.1:9/hook', WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}` }
const SHARED = { DATABASE_URL: 'sqlite:plants.db' }
const configOf = (env: Record<string, string>) => loadConfig({ ...SHARED, ...ENDPOINT, ...env })
const roleOf = (env: Record<string, string>) => serviceRole(configOf(env))
const deliveryOf = (env: Record<string, string>) => readWebhooks(configOf(env))?.delivery

/** The one line a refused configuration exits with: it names `variable` and ends with its fix. */
function refused (t: Test, read: () => unknown, variable: string, line: string) {
  const error = t.throws(read, ConfigError, `${variable} refused`) as Error
  t.equal(error.message, `Invalid configuration: ${variable} ${line}.`)
  t.notMatch(error.message, /\n/, 'one line')
}

t.test('by default: the API served, delivered in a thread; WEBHOOK_DELIVERY is the plugin\'s delivery, one to one', async (t) => {
  t.same(roleOf({}), { api: true, delivery: 'thread' })
  t.equal(deliveryOf({}), 'thread', 'passed to the plugin as it is')
  for (const delivery of ['thread', 'in-process', 'off']) {
    t.same(roleOf({ WEBHOOK_DELIVERY: delivery }), { api: true, delivery }, `WEBHOOK_DELIVERY=${delivery}`)
    t.equal(deliveryOf({ WEBHOOK_DELIVERY: delivery }), delivery, `webhooks.delivery ${delivery}`)
    t.doesNotThrow(() => checkOptions({ tokens: ['t'], store: SHARED.DATABASE_URL, webhooks: readWebhooks(configOf({ WEBHOOK_DELIVERY: delivery })) }),
      'the plugin takes it')
  }
  t.same(roleOf({ API: 'on' }), { api: true, delivery: 'thread' }, 'API=on is the default said out loud')
  t.equal(readWebhooks(loadConfig({ ...SHARED })), undefined, 'no endpoint, the default role: webhooks off')
})

t.test('API=off: a delivery-only instance, delivering in a thread or in-process', async (t) => {
  t.same(roleOf({ API: 'off' }), { api: false, delivery: 'thread' })
  t.equal(deliveryOf({ API: 'off' }), 'thread')
  t.same(roleOf({ API: 'off', WEBHOOK_DELIVERY: 'in-process' }), { api: false, delivery: 'in-process' })
  t.equal(deliveryOf({ API: 'off', WEBHOOK_DELIVERY: 'in-process' }), 'in-process')
})

t.test('WEBHOOK_DELIVERY=only is an alias of API=off with WEBHOOK_DELIVERY=thread, with a warning that names them', async (t) => {
  const notice = 'WEBHOOK_DELIVERY=only is an alias of API=off with WEBHOOK_DELIVERY=thread: set those two instead'
  t.same(roleOf({ WEBHOOK_DELIVERY: 'only' }), { api: false, delivery: 'thread', notice })
  t.same(roleOf({ WEBHOOK_DELIVERY: 'only', API: 'off' }), { api: false, delivery: 'thread', notice }, 'with API=off too: the same')
  t.equal(deliveryOf({ WEBHOOK_DELIVERY: 'only' }), 'thread', 'the plugin delivers in a thread')
  refused(t, () => roleOf({ WEBHOOK_DELIVERY: 'only', API: 'on' }), 'WEBHOOK_DELIVERY',
    'is only, an alias of API=off, while API is on; set API=off with WEBHOOK_DELIVERY=thread for a delivery-only instance, or unset WEBHOOK_DELIVERY')
})

t.test('a role that cannot work is refused with one line naming the variable and the fix', async (t) => {
  refused(t, () => roleOf({ API: 'off', WEBHOOK_DELIVERY: 'off' }), 'API',
    'is off with WEBHOOK_DELIVERY=off, so this instance would neither serve the API nor deliver; set WEBHOOK_DELIVERY to thread or in-process for a delivery-only instance, or unset API')
  const noEndpoint = (env: Record<string, string>) => () => readWebhooks(loadConfig({ ...SHARED, ...env }))
  const setOne = 'set WEBHOOK_URL and WEBHOOK_SECRET, or WEBHOOK_ENDPOINTS_FILE (the same on every instance), or unset'
  refused(t, noEndpoint({ API: 'off' }), 'API', `is off but no webhook endpoint is set; ${setOne} API`)
  refused(t, noEndpoint({ API: 'off', WEBHOOK_DELIVERY: 'in-process' }), 'API', `is off but no webhook endpoint is set; ${setOne} API`)
  refused(t, noEndpoint({ WEBHOOK_DELIVERY: 'only' }), 'WEBHOOK_DELIVERY', `is only but no webhook endpoint is set; ${setOne} WEBHOOK_DELIVERY`)
  for (const delivery of ['off', 'in-process']) {
    refused(t, noEndpoint({ WEBHOOK_DELIVERY: delivery }), 'WEBHOOK_DELIVERY', `is ${delivery} but no webhook endpoint is set; ${setOne} WEBHOOK_DELIVERY`)
  }
  const memory = (env: Record<string, string>) => () => readWebhooks(loadConfig({ ...ENDPOINT, DATABASE_URL: 'memory:', ...env }))
  const share = 'whose events no other instance can reach; set DATABASE_URL to a sqlite:<path> file or a postgres:// database shared by the instances, or unset'
  refused(t, memory({ API: 'off' }), 'API', `is off with DATABASE_URL=memory:, ${share} API`)
  refused(t, memory({ WEBHOOK_DELIVERY: 'off' }), 'WEBHOOK_DELIVERY', `is off with DATABASE_URL=memory:, ${share} WEBHOOK_DELIVERY`)
  refused(t, memory({ WEBHOOK_DELIVERY: 'only' }), 'WEBHOOK_DELIVERY', `is only with DATABASE_URL=memory:, ${share} WEBHOOK_DELIVERY`)
  t.equal(memory({ WEBHOOK_DELIVERY: 'in-process' })()?.delivery, 'in-process', 'the memory store delivering on its own event loop: as it always does')
  t.equal(memory({})()?.delivery, 'thread', 'and by default (the plugin delivers in-process on memory)')
})

t.test('an unknown value names each value the setting takes', async (t) => {
  t.throws(() => loadConfig({ WEBHOOK_DELIVERY: 'elsewhere' }), {
    message: /^Invalid configuration: WEBHOOK_DELIVERY must be equal to one of the allowed values; set WEBHOOK_DELIVERY to thread \(the default: in a worker thread of its own\), in-process \(.*\) or off \(.*\), as the plugin's webhooks\.delivery; only is an alias of API=off with WEBHOOK_DELIVERY=thread\.$/
  })
  t.throws(() => loadConfig({ API: 'no' }), {
    message: /^Invalid configuration: API must be equal to one of the allowed values; set API to on \(the default: .*\) or off \(a delivery-only instance: .*\), which needs WEBHOOK_URL or WEBHOOK_ENDPOINTS_FILE and WEBHOOK_DELIVERY thread or in-process\.$/
  })
})

t.test('API is a setting: api is taken for it, a name one letter from it (APP) is not', async (t) => {
  t.same(configHints({ api: 'off' }), ['api is not a setting and is ignored: did you mean API?'])
  t.same(configHints({ APP: 'shop', AP: 'x', APIS: 'x' }), [], 'three letters: another name, not a typo')
  t.same(configHints({ API: 'off' }), [])
})
