/**
 * A host's pg.Pool given with `delivery: 'thread'`: the thread makes a pool of its own from the
 * pool's settings, which must be plain data to be copied into it. What cannot be copied is refused
 * with a line that says what to set instead. No connection is made here.
 */
import pg from 'pg'
import t from 'tap'
import { WebhookSettingError } from '../../plugins/webhooks/settings.js'
import { poolSettingsOf } from '../../plugins/webhooks/thread/pool-settings.js'

const URL = 'postgres://host-user@db.example:5433/garden'
const FIX = /; set webhooks\.delivery to 'in-process' \(delivery on this event loop, on the pool itself\), or give the store as a postgres:\/\/ URL$/

t.test('the settings a pool was made with, with its hidden password and ssl key, less the pool\'s own size and machinery', async (t) => {
  const key = Buffer.from('private key')
  const pool = new pg.Pool({
    connectionString: URL,
    password: 'secret',
    ssl: { rejectUnauthorized: true, ca: ['a certificate'], key },
    statement_timeout: 500,
    application_name: 'host',
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 1000,
    max: 50,
    min: 2,
    allowExitOnIdle: true,
    log: () => {},
    types: { getTypeParser: () => String } as never
  })
  t.notOk(Object.keys(pool.options).includes('password'), 'pg-pool hides the password from enumeration')
  t.same(poolSettingsOf(pool), {
    connectionString: URL,
    password: 'secret',
    ssl: { rejectUnauthorized: true, ca: ['a certificate'], key },
    statement_timeout: 500,
    application_name: 'host',
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 1000,
    maxUses: Infinity,
    maxLifetimeSeconds: 0
  })
  t.same(structuredClone(poolSettingsOf(pool)).password, 'secret', 'copied into a thread as it is, password and all')
  t.same(poolSettingsOf(new pg.Pool()), { idleTimeoutMillis: 10_000, maxUses: Infinity, maxLifetimeSeconds: 0 }, 'a pool of the environment\'s PG* settings: those, in the thread too')
})

t.test('a setting that cannot be copied into a thread is refused, named, with what to set instead', async (t) => {
  const cases: Array<[string, pg.PoolConfig & Record<string, unknown>, RegExp]> = [
    ['a password given as a function', { password: async () => 'secret' }, /whose password is a function, which cannot be copied into a thread/],
    ['a custom Client', { Client: class extends pg.Client {} as never }, /whose Client is a function/],
    ['an ssl callback', { ssl: { checkServerIdentity: () => undefined } }, /whose ssl is not plain data \(a function, or an object of a class, is in it\)/],
    ['a stream of its own', { stream: () => new (class Duplex {})() as never }, /whose stream is a function/],
    ['an object of a class', { ssl: { secureContext: new (class SecureContext {})() as never } }, /whose ssl is not plain data/]
  ]
  for (const [label, config, problem] of cases) {
    const error = t.throws(() => poolSettingsOf(new pg.Pool(config)), WebhookSettingError, label) as WebhookSettingError
    t.equal(error.setting, 'webhooks.delivery', `${label}: the setting named`)
    t.match(error.message, /^webhooks\.delivery is 'thread' with a pg\.Pool as the store, /, `${label}: the problem said`)
    t.match(error.message, problem, `${label}: which setting`)
    t.match(error.message, FIX, `${label}: and what to set`)
  }
})

t.test('a pool whose connect or acquire listeners set its connections up is refused: the thread\'s pool would lack them; a pool-like object needs its settings', async (t) => {
  for (const event of ['connect', 'acquire'] as const) {
    const pool = new pg.Pool({ connectionString: URL })
    pool.on(event, () => {})
    t.throws(() => poolSettingsOf(pool), { message: new RegExp(`whose '${event}' listeners set up its connections, which the thread's would lack \\(session settings can go in the pool's options setting`) })
  }
  const poolLike = { connect: async () => {}, query () {}, end: async () => {} }
  t.same(poolSettingsOf(Object.assign({ options: { connectionString: URL } }, poolLike)), { connectionString: URL }, 'a pool-like object with settings and no listeners: its settings')
  t.throws(() => poolSettingsOf(poolLike), { message: /whose settings cannot be read \(a pg\.Pool keeps them as pool\.options\)/ }, 'one without: refused')
  const listened = new pg.Pool({ connectionString: URL })
  listened.on('error', () => {})
  t.same(poolSettingsOf(listened).connectionString, URL, 'an error listener (which every pool needs) is no set-up')
})
