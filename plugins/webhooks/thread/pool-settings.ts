import type { PgPool } from '../../store/index.js'
import { WebhookSettingError } from '../settings.js'

/** A host pg.Pool's connection settings (pg's PoolConfig less the pool's own size), as plain data. */
export type PoolSettings = Record<string, unknown>

// The host pool's size is its own (the thread's pool has a size of its own); its log and Promise
// are machinery the thread's pool does without; and the store parses what it reads itself (types).
const LEFT_OUT = new Set(['max', 'min', 'poolSize', 'allowExitOnIdle', 'log', 'Promise', 'types'])
// Listeners that set up each connection of the pool (a search_path, a role): the thread's would lack them.
const SETUP_EVENTS = ['connect', 'acquire']

const FIX = 'set webhooks.delivery to \'in-process\' (delivery on this event loop, on the pool itself), or give the store as a postgres:// URL'

const refused = (problem: string) => new WebhookSettingError('webhooks.delivery',
  `is 'thread' with a pg.Pool as the store, ${problem}: the delivery thread opens a pool of its own from the pool's settings`, FIX)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/** Whether `value` is data a thread is given as it is: no function, no object of a class of its own. */
function plainData (value: unknown): boolean {
  if (typeof value === 'function' || typeof value === 'symbol') return false
  if (!isObject(value) || ArrayBuffer.isView(value)) return true
  if (Array.isArray(value)) return value.every(plainData)
  const prototype = Object.getPrototypeOf(value)
  return (prototype === Object.prototype || prototype === null) && Object.values(value).every(plainData)
}

const kindOf = (value: unknown) => typeof value === 'function' ? 'a function' : 'not plain data (a function, or an object of a class, is in it)'

/**
 * The settings of a host's pool that a thread can open a pool of its own with (pg keeps them as
 * `pool.options`); refused, with what to set instead, when one of them cannot be copied into a
 * thread (a password given as a function, a custom Client or stream, an ssl callback) or when
 * listeners set up the pool's connections.
 */
export function poolSettingsOf (pool: PgPool): PoolSettings {
  const { options, listenerCount } = pool as { options?: unknown, listenerCount?: (event: string) => number }
  if (!isObject(options)) throw refused('whose settings cannot be read (a pg.Pool keeps them as pool.options)')
  const settings: PoolSettings = { ...options }
  // pg-pool hides these two from enumeration (so that a logged pool does not show them): taken by name.
  if ('password' in options) settings.password = options.password
  if (isObject(options.ssl) && 'key' in options.ssl) settings.ssl = { ...options.ssl, key: options.ssl.key }
  for (const name of LEFT_OUT) delete settings[name]
  // A pool-like object that is no event emitter has none.
  const listened = SETUP_EVENTS.find((event) => typeof listenerCount === 'function' && listenerCount.call(pool, event) > 0)
  if (listened !== undefined) {
    throw refused(`whose '${listened}' listeners set up its connections, which the thread's would lack (session settings can go in the pool's options setting, e.g. '-c search_path=…')`)
  }
  for (const [name, value] of Object.entries(settings)) {
    if (!plainData(value)) throw refused(`whose ${name} is ${kindOf(value)}, which cannot be copied into a thread`)
  }
  return settings
}
