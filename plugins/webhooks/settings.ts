import ipaddr from 'ipaddr.js'
import { Ajv } from 'ajv'
import { Type, type Static } from 'typebox'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../schemas/protocol.js'

export { WEBHOOK_EVENT_TYPES, type WebhookEventType }

/** Standard Webhooks' retry table: the waits after each failed attempt. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h'
export const DEFAULT_WEBHOOK_TIMEOUT = 15_000
const DAY_MS = 86_400_000
/** An endpoint with no successful delivery for this long is disabled. */
export const DEFAULT_DISABLE_AFTER = 5 * DAY_MS
/** Finished events are kept this long; a pending one is never dropped. */
export const DEFAULT_RETENTION = 7 * DAY_MS
const SECRET_PREFIX = 'whsec_'
const SECRET_BYTES = { minimum: 24, maximum: 64 }
const SECRET_RULE = `${SECRET_PREFIX} followed by the base64 of ${SECRET_BYTES.minimum} to ${SECRET_BYTES.maximum} random bytes`

const EndpointSchema = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'a name of 1 to 64 letters, digits, _ . -' }),
  url: Type.String({ pattern: '^https?://', description: 'an http:// or https:// URL' }),
  secrets: Type.Array(Type.String({ description: SECRET_RULE }), { minItems: 1, description: `a non-empty array of secrets, each ${SECRET_RULE}` }),
  events: Type.Optional(Type.Array(Type.Enum(WEBHOOK_EVENT_TYPES), {
    minItems: 1, description: `a non-empty array of ${WEBHOOK_EVENT_TYPES.join(', ')} (default plant.created)`
  }))
}, { additionalProperties: false, description: 'an endpoint: {name, url, secrets, events}' })
const ENDPOINT_KEYS = Object.keys(EndpointSchema.properties)

/**
 * Where an app delivers the events of its outbox: in a worker thread of its own (with its own
 * connection to the store), on its event loop, or not at all (another instance delivers).
 */
export const WEBHOOK_DELIVERY_PLACES = ['thread', 'in-process', 'off'] as const

/** The `webhooks` plugin option; the env settings of the service map onto it. */
export const WebhooksOptionsSchema = Type.Object({
  endpoints: Type.Array(EndpointSchema, { minItems: 1, description: 'a non-empty array of endpoints {name, url, secrets, events}' }),
  retrySchedule: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }), {
    minItems: 1, description: 'a non-empty array of waits in ms after each failed attempt (default Standard Webhooks\' table)'
  })),
  timeout: Type.Optional(Type.Integer({ minimum: 1, description: `the longest attempt in ms (default ${DEFAULT_WEBHOOK_TIMEOUT})` })),
  allowedNetworks: Type.Optional(Type.Array(Type.String(), {
    description: 'CIDRs (e.g. 127.0.0.0/8) reachable although private or loopback'
  })),
  disableAfter: Type.Optional(Type.Integer({ minimum: 1, description: 'ms without a successful delivery after which an endpoint is disabled (default 5 days)' })),
  retention: Type.Optional(Type.Integer({ minimum: 1, description: 'ms that finished events are kept (default 7 days)' })),
  drainTimeout: Type.Optional(Type.Integer({ minimum: 0, description: 'ms that attempts in flight get to finish when the app closes (default: timeout)' })),
  delivery: Type.Optional(Type.Enum(WEBHOOK_DELIVERY_PLACES, {
    description: `where this app delivers: ${WEBHOOK_DELIVERY_PLACES.join(', ')} (default thread; the memory store, a pg.Pool or a store object deliver in-process)`
  }))
}, {
  additionalProperties: false,
  description: 'webhook endpoints and delivery settings {endpoints, retrySchedule, timeout, allowedNetworks, disableAfter, retention, drainTimeout, delivery}'
})

export type WebhooksOptions = Static<typeof WebhooksOptionsSchema>

/** A webhook setting that cannot be used: `setting` names it, the message says how to fix it. */
export class WebhookSettingError extends Error {
  override name = 'WebhookSettingError'
  constructor (readonly setting: string, readonly problem: string, readonly fix: string) {
    super(`${setting} ${problem}; ${fix}`)
  }
}

/** The key bytes of a whsec_ secret. */
export function secretKey (secret: string, setting: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : ''
  const key = Buffer.from(encoded, 'base64')
  // Node's base64 decoder skips what is not base64: a round trip shows the text was exactly that.
  const exact = encoded !== '' && key.toString('base64').replace(/=+$/, '') === encoded.replace(/=+$/, '')
  if (!exact || key.length < SECRET_BYTES.minimum || key.length > SECRET_BYTES.maximum) {
    // The secret is not quoted: it would land in a log.
    throw new WebhookSettingError(setting, 'is not a valid secret', `set it to ${SECRET_RULE}, comma-separated to rotate`)
  }
  return key
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** '100ms', '5s', '30m', '2h' in ms. */
export function parseDuration (text: string, setting: string): number {
  const match = /^(\d+)(ms|s|m|h)$/.exec(text.trim())
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]]
  if (!Number.isSafeInteger(ms) || ms > 2_147_483_647) {
    throw new WebhookSettingError(setting, `holds "${text}", not a duration`, 'write each as a whole number with ms, s, m or h (e.g. 100ms, 5s, 30m, 2h), at most about 24 days')
  }
  return ms
}

/** Parsed CIDRs; a bare address is the network of just that address. */
export function parseNetworks (cidrs: readonly string[], setting: string): Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> {
  return cidrs.map((cidr) => {
    try {
      return cidr.includes('/') ? ipaddr.parseCIDR(cidr) : ipaddr.parseCIDR(`${cidr}/${ipaddr.parse(cidr).kind() === 'ipv4' ? 32 : 128}`)
    } catch {
      throw new WebhookSettingError(setting, `holds "${cidr}", not a network`, 'write CIDRs such as 127.0.0.0/8 or fd00::/8, comma-separated')
    }
  })
}

export interface WebhookEndpoint { name: string, url: URL, keys: Buffer[], events: WebhookEventType[] }
export interface WebhooksConfig {
  endpoints: WebhookEndpoint[]
  retrySchedule: number[]
  timeout: number
  allowedNetworks: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>
  disableAfter: number
  retention: number
  drainTimeout: number
}

/** Checks what the option schema cannot (secrets, URLs, names, networks) and decodes it. */
export function resolveWebhooks (options: WebhooksOptions, settingOf = (path: string) => `webhooks.${path}`): WebhooksConfig {
  const names = new Set<string>()
  const endpoints = options.endpoints.map((endpoint, index) => {
    if (names.has(endpoint.name)) {
      throw new WebhookSettingError(settingOf(`endpoints.${index}.name`), `repeats the name "${endpoint.name}"`, 'give each endpoint its own name')
    }
    names.add(endpoint.name)
    let url: URL | undefined
    try { url = new URL(endpoint.url) } catch {}
    if (url === undefined || !/^https?:$/.test(url.protocol) || url.username !== '' || url.password !== '') {
      throw new WebhookSettingError(settingOf(`endpoints.${index}.url`), 'is not an http(s) URL without credentials', 'set it to http(s)://host[:port]/path')
    }
    const keys = endpoint.secrets.map((secret) => secretKey(secret, settingOf(`endpoints.${index}.secrets`)))
    return { name: endpoint.name, url, keys, events: [...new Set(endpoint.events ?? ['plant.created' as const])] }
  })
  return {
    endpoints,
    retrySchedule: [...(options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE.split(',').map((wait) => parseDuration(wait, 'retrySchedule')))],
    timeout: options.timeout ?? DEFAULT_WEBHOOK_TIMEOUT,
    allowedNetworks: parseNetworks(options.allowedNetworks ?? [], settingOf('allowedNetworks')),
    disableAfter: options.disableAfter ?? DEFAULT_DISABLE_AFTER,
    retention: options.retention ?? DEFAULT_RETENTION,
    drainTimeout: options.drainTimeout ?? options.timeout ?? DEFAULT_WEBHOOK_TIMEOUT
  }
}

/** The WEBHOOK_* variables the service reads. */
export interface WebhookEnv {
  WEBHOOK_URL?: string
  WEBHOOK_SECRET?: string
  WEBHOOK_EVENTS?: string
  WEBHOOK_ENDPOINTS_FILE?: string
  WEBHOOK_RETRY_SCHEDULE?: string
  WEBHOOK_TIMEOUT?: string
  WEBHOOK_ALLOWED_NETWORKS?: string
  WEBHOOK_DISABLE_AFTER?: string
  WEBHOOK_RETENTION?: string
}

/** Reads a setting file's text, or throws a WebhookSettingError saying why it cannot (the service bounds it). */
export type ReadSettingFile = (path: string) => string

const list = (text: string) => text.split(',').map((entry) => entry.trim()).filter(Boolean)
const ENDPOINTS_ARRAY = `a JSON array of endpoints {${ENDPOINT_KEYS.join(', ')}}`

function endpointsFile (path: string, read: ReadSettingFile): WebhooksOptions['endpoints'] {
  const text = read(path)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // The parser's message may quote the file, secrets and all: it is not passed on.
    throw new WebhookSettingError('WEBHOOK_ENDPOINTS_FILE', 'does not hold valid JSON', `write ${ENDPOINTS_ARRAY}`)
  }
  if (!Array.isArray(parsed)) throw new WebhookSettingError('WEBHOOK_ENDPOINTS_FILE', 'does not hold a JSON array', `write ${ENDPOINTS_ARRAY}`)
  if (parsed.length === 0) {
    throw new WebhookSettingError('WEBHOOK_ENDPOINTS_FILE', 'holds no endpoint', `write ${ENDPOINTS_ARRAY}, or unset it to turn webhooks off`)
  }
  return parsed as WebhooksOptions['endpoints']
}

// Settings of the delivery itself: meaningless, so refused, without an endpoint to deliver to.
const DELIVERY_SETTINGS = ['WEBHOOK_RETRY_SCHEDULE', 'WEBHOOK_TIMEOUT', 'WEBHOOK_ALLOWED_NETWORKS', 'WEBHOOK_DISABLE_AFTER', 'WEBHOOK_RETENTION'] as const

/**
 * The `webhooks` option from the WEBHOOK_* variables, or undefined when no endpoint is set (the
 * feature is then off). Shapes are checked by the caller with the option schema.
 */
export function webhooksFromEnv (env: WebhookEnv, read: ReadSettingFile): WebhooksOptions | undefined {
  const endpoints: WebhooksOptions['endpoints'] = []
  if (env.WEBHOOK_URL !== undefined || env.WEBHOOK_SECRET !== undefined) {
    if (env.WEBHOOK_URL === undefined || env.WEBHOOK_SECRET === undefined) {
      const missing = env.WEBHOOK_URL === undefined ? 'WEBHOOK_URL' : 'WEBHOOK_SECRET'
      throw new WebhookSettingError(missing, 'is not set', 'set WEBHOOK_URL and WEBHOOK_SECRET together')
    }
    const events = list(env.WEBHOOK_EVENTS ?? 'plant.created')
    const unknown = events.find((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type))
    if (unknown !== undefined || events.length === 0) {
      throw new WebhookSettingError('WEBHOOK_EVENTS', `holds "${unknown ?? ''}"`, `set it to ${WEBHOOK_EVENT_TYPES.join(', ')}, comma-separated`)
    }
    endpoints.push({ name: 'default', url: env.WEBHOOK_URL, secrets: list(env.WEBHOOK_SECRET), events: events as WebhookEventType[] })
  }
  // Each endpoint of the file names its own events: WEBHOOK_EVENTS would silently apply to none.
  if (env.WEBHOOK_EVENTS !== undefined && endpoints.length === 0) {
    throw new WebhookSettingError('WEBHOOK_EVENTS', 'is set without WEBHOOK_URL, the only endpoint it applies to',
      'set the events of each endpoint of WEBHOOK_ENDPOINTS_FILE in its "events", or unset WEBHOOK_EVENTS')
  }
  if (env.WEBHOOK_ENDPOINTS_FILE !== undefined) endpoints.push(...endpointsFile(env.WEBHOOK_ENDPOINTS_FILE, read))
  if (endpoints.length === 0) {
    const orphan = DELIVERY_SETTINGS.find((setting) => env[setting] !== undefined)
    if (orphan !== undefined) {
      throw new WebhookSettingError(orphan, 'is set but no webhook endpoint is', 'set WEBHOOK_URL and WEBHOOK_SECRET, or WEBHOOK_ENDPOINTS_FILE, or unset it')
    }
    return undefined
  }
  const positive = (setting: keyof WebhookEnv, example: string) => {
    const text = env[setting]
    const ms = text === undefined ? undefined : parseDuration(text, setting)
    if (ms === 0) throw new WebhookSettingError(setting, 'is 0', `set it to a positive duration such as ${example}`)
    return ms
  }
  const timeout = positive('WEBHOOK_TIMEOUT', '15s')
  const disableAfter = positive('WEBHOOK_DISABLE_AFTER', '120h')
  const retention = positive('WEBHOOK_RETENTION', '168h')
  const retrySchedule = list(env.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE).map((wait) => parseDuration(wait, 'WEBHOOK_RETRY_SCHEDULE'))
  if (retrySchedule.length === 0) throw new WebhookSettingError('WEBHOOK_RETRY_SCHEDULE', 'is empty', `set it to waits such as ${DEFAULT_RETRY_SCHEDULE}`)
  return {
    endpoints,
    retrySchedule,
    timeout,
    allowedNetworks: list(env.WEBHOOK_ALLOWED_NETWORKS ?? ''),
    disableAfter,
    retention
  }
}

/** Names the WEBHOOK_* variable behind a path of the option built by webhooksFromEnv. */
function envSettingOf (env: WebhookEnv) {
  const single = env.WEBHOOK_URL === undefined ? 0 : 1
  return (path: string): string => {
    const [top, index, field] = path.split('.')
    // The schedule is checked as it is parsed, so only these paths can be wrong here.
    if (top === 'allowedNetworks') return 'WEBHOOK_ALLOWED_NETWORKS'
    if (Number(index) >= single) return `WEBHOOK_ENDPOINTS_FILE (entry ${Number(index) - single + 1}${field === undefined ? '' : `, ${field}`})`
    return field === 'url' ? 'WEBHOOK_URL' : 'WEBHOOK_SECRET'
  }
}

/**
 * The service's `webhooks` option, checked; undefined when none is set. Throws a
 * WebhookSettingError naming the variable. The schema is compiled only when webhooks are on.
 */
export function readWebhooksEnv (env: WebhookEnv, read: ReadSettingFile): WebhooksOptions | undefined {
  const options = webhooksFromEnv(env, read)
  if (options === undefined) return undefined
  const settingOf = envSettingOf(env)
  const validate = new Ajv({ strict: false, validateSchema: false }).compile(WebhooksOptionsSchema)
  if (!validate(options)) {
    const [first] = validate.errors!
    const path = first.instancePath.split('/').slice(1).join('.')
    // Only an entry of the file can hold a key of its own: the settings build the rest.
    const unknown = (first.params as { additionalProperty?: string }).additionalProperty
    if (unknown !== undefined) {
      throw new WebhookSettingError(settingOf(path), `holds the unknown key ${JSON.stringify(unknown)}`, `an endpoint takes only ${ENDPOINT_KEYS.join(', ')}`)
    }
    throw new WebhookSettingError(settingOf(path), first.message!, 'see the Webhooks section of the README')
  }
  resolveWebhooks(options, settingOf)
  return options
}
