import { Ajv } from 'ajv'
import { Type, type Static } from 'typebox'
import {
  DEFAULT_RETRY_SCHEDULE, parseDuration, resolveWebhooks, WEBHOOK_DELIVERY_PLACES, WEBHOOK_ENDPOINT_KEYS, WEBHOOK_EVENT_TYPES, WebhookSettingError,
  WebhooksOptionsSchema, type WebhookEventType, type WebhooksOptions
} from '../../src/service-settings.js'
import { MAX_SETTING_FILE_BYTES } from './setting-file.js'

/** WEBHOOK_DELIVERY=only: the spelling of a delivery-only instance before API existed, kept as an alias of API=off. */
const ONLY = 'only'

/** The values of WEBHOOK_DELIVERY: exactly the plugin's webhooks.delivery, and the alias. */
export const WEBHOOK_DELIVERY_VALUES = [...WEBHOOK_DELIVERY_PLACES, ONLY] as const

/**
 * The service's role (API, WEBHOOK_DELIVERY) and the WEBHOOK_* settings, in the service's config
 * schema. The WEBHOOK_* values are text, checked here as they are read (readWebhooksEnv): they are
 * lists and durations, not single numbers.
 */
export const WebhookSettings = {
  API: Type.Optional(Type.Enum(['on', 'off'], {
    description: 'on (the default: the plant and webhook admin routes are served) or off (a delivery-only instance: webhook delivery, /healthz, /readyz ' +
      'and /metrics, no plant or admin route and no token), which needs WEBHOOK_URL or WEBHOOK_ENDPOINTS_FILE and WEBHOOK_DELIVERY thread or in-process'
  })),
  WEBHOOK_URL: Type.Optional(Type.String({ description: 'the http(s) URL new-plant events are POSTed to (with WEBHOOK_SECRET)' })),
  WEBHOOK_SECRET: Type.Optional(Type.String({ description: 'whsec_ + base64 of 24 to 64 random bytes; comma-separated to rotate (each signs)' })),
  WEBHOOK_EVENTS: Type.Optional(Type.String({ description: `the events sent to WEBHOOK_URL: ${WEBHOOK_EVENT_TYPES.join(', ')}, comma-separated (default plant.created)` })),
  WEBHOOK_ENDPOINTS_FILE: Type.Optional(Type.String({
    description: `a regular file holding a JSON array of endpoints {name, url, secrets, events}, at most ${MAX_SETTING_FILE_BYTES} bytes`
  })),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(Type.String({ description: `the waits after each failed delivery attempt (ms, s, m, h), jittered 20 %; default ${DEFAULT_RETRY_SCHEDULE}` })),
  WEBHOOK_TIMEOUT: Type.Optional(Type.String({ description: 'the longest delivery attempt, a duration such as 15s (default)' })),
  WEBHOOK_ALLOWED_NETWORKS: Type.Optional(Type.String({ description: 'CIDRs webhooks may reach although private or loopback, comma-separated' })),
  WEBHOOK_DISABLE_AFTER: Type.Optional(Type.String({ description: 'how long an endpoint may go without a successful delivery before it is disabled, a duration (default 120h)' })),
  WEBHOOK_RETENTION: Type.Optional(Type.String({ description: 'how long finished events are kept, a duration (default 168h)' })),
  WEBHOOK_DELIVERY: Type.Enum(WEBHOOK_DELIVERY_VALUES, {
    default: 'thread',
    description: 'thread (the default: in a worker thread of its own), in-process (on the event loop that serves the API) or off (not at all: ' +
      'events are written and another instance delivers them), as the plugin\'s webhooks.delivery; only is an alias of API=off with WEBHOOK_DELIVERY=thread'
  })
}

/** API and the WEBHOOK_* variables the service reads, as the schema types them. */
export type WebhookEnv = Static<ReturnType<typeof Type.Object<typeof WebhookSettings>>>

/** What an instance does: serve the API or not, and where it delivers (the plugin's webhooks.delivery). */
export interface ServiceRole {
  api: boolean
  delivery: typeof WEBHOOK_DELIVERY_PLACES[number]
  /** The one start-up warning the alias calls for, naming the spelling to use instead. */
  notice?: string
}

/**
 * The role from its two switches, read here and nowhere else: API (on, or off for a delivery-only
 * instance) and WEBHOOK_DELIVERY (where this instance delivers), WEBHOOK_DELIVERY=only taken for
 * API=off with WEBHOOK_DELIVERY=thread. A pair that cannot work throws a WebhookSettingError.
 */
export function roleFromEnv (env: Pick<WebhookEnv, 'API' | 'WEBHOOK_DELIVERY'>): ServiceRole {
  if (env.WEBHOOK_DELIVERY === ONLY) {
    if (env.API === 'on') {
      throw new WebhookSettingError('WEBHOOK_DELIVERY', 'is only, an alias of API=off, while API is on',
        'set API=off with WEBHOOK_DELIVERY=thread for a delivery-only instance, or unset WEBHOOK_DELIVERY')
    }
    return { api: false, delivery: 'thread', notice: 'WEBHOOK_DELIVERY=only is an alias of API=off with WEBHOOK_DELIVERY=thread: set those two instead' }
  }
  const api = env.API !== 'off'
  if (!api && env.WEBHOOK_DELIVERY === 'off') {
    throw new WebhookSettingError('API', 'is off with WEBHOOK_DELIVERY=off, so this instance would neither serve the API nor deliver',
      'set WEBHOOK_DELIVERY to thread or in-process for a delivery-only instance, or unset API')
  }
  return { api, delivery: env.WEBHOOK_DELIVERY }
}

/**
 * What a role other than the default one (an API instance that delivers in a thread) is about:
 * webhooks. Such an instance needs an endpoint, and, when another instance writes or delivers its
 * events, a store that instance reaches. Refused otherwise, naming the switch set.
 */
function checkRole (env: WebhookEnv & { DATABASE_URL: string }, role: ServiceRole, endpoints: boolean): void {
  const [setting, value] = !role.api ? (env.WEBHOOK_DELIVERY === ONLY ? ['WEBHOOK_DELIVERY', ONLY] : ['API', 'off']) : ['WEBHOOK_DELIVERY', role.delivery]
  if (!endpoints && (!role.api || role.delivery !== 'thread')) {
    throw new WebhookSettingError(setting, `is ${value} but no webhook endpoint is set`,
      `set WEBHOOK_URL and WEBHOOK_SECRET, or WEBHOOK_ENDPOINTS_FILE (the same on every instance), or unset ${setting}`)
  }
  if ((!role.api || role.delivery === 'off') && env.DATABASE_URL === 'memory:') {
    throw new WebhookSettingError(setting, `is ${value} with DATABASE_URL=memory:, whose events no other instance can reach`,
      `set DATABASE_URL to a sqlite:<path> file or a postgres:// database shared by the instances, or unset ${setting}`)
  }
}

/** Reads a setting file's text, or throws a WebhookSettingError saying why it cannot (the service bounds it). */
export type ReadSettingFile = (path: string) => string

const list = (text: string) => text.split(',').map((entry) => entry.trim()).filter(Boolean)
const ENDPOINTS_ARRAY = `a JSON array of endpoints {${WEBHOOK_ENDPOINT_KEYS.join(', ')}}`

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
  const positive = (setting: typeof DELIVERY_SETTINGS[number], example: string) => {
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
 * The service's `webhooks` option, checked, its `delivery` the role's; undefined when no endpoint
 * is set. Throws a WebhookSettingError naming the variable. The schema is compiled only when
 * webhooks are on.
 */
export function readWebhooksEnv (env: WebhookEnv & { DATABASE_URL: string }, read: ReadSettingFile): WebhooksOptions | undefined {
  const role = roleFromEnv(env)
  const options = webhooksFromEnv(env, read)
  checkRole(env, role, options !== undefined)
  if (options === undefined) return undefined
  const settingOf = envSettingOf(env)
  const validate = new Ajv({ strict: false, validateSchema: false }).compile(WebhooksOptionsSchema)
  if (!validate(options)) {
    const [first] = validate.errors!
    const path = first.instancePath.split('/').slice(1).join('.')
    // Only an entry of the file can hold a key of its own: the settings build the rest.
    const unknown = (first.params as { additionalProperty?: string }).additionalProperty
    if (unknown !== undefined) {
      throw new WebhookSettingError(settingOf(path), `holds the unknown key ${JSON.stringify(unknown)}`, `an endpoint takes only ${WEBHOOK_ENDPOINT_KEYS.join(', ')}`)
    }
    throw new WebhookSettingError(settingOf(path), first.message!, 'see the Webhooks section of the README')
  }
  resolveWebhooks(options, settingOf)
  return { ...options, delivery: role.delivery }
}
