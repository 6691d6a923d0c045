import ipaddr from 'ipaddr.js'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../schemas/protocol.js'
import type { WebhooksOptions } from './options-schema.js'

export { WEBHOOK_EVENT_TYPES, type WebhookEventType }

// The option's schema (TypeBox) is options-schema.ts: this module, which the delivery thread loads
// too, decodes what that schema accepted and imports no TypeBox.

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
/** What a secret must be, as its errors and the option's schema say it. */
export const SECRET_RULE = `${SECRET_PREFIX} followed by the base64 of ${SECRET_BYTES.minimum} to ${SECRET_BYTES.maximum} random bytes`

/**
 * Where an app delivers the events of its outbox: in a worker thread of its own (with its own
 * connection to the store), on its event loop, or not at all (another instance delivers).
 */
export const WEBHOOK_DELIVERY_PLACES = ['thread', 'in-process', 'off'] as const

/**
 * The delivery thread's engine limits (worker_threads' resourceLimits), so that a leak or an
 * overload fills the thread's heap, not the process's: the thread then ends alone and is started
 * again. It holds no backlog, only what it claimed: at most 8 x 64 deliveries per endpoint
 * (delivery/worker.ts). Its heap peaked at ~35 MB for one endpoint, ~120 MB for ten with
 * 1000-character names at 10,000 deliveries a second: 512 MB leaves room for some forty of those,
 * far below the 4 GB the process's own heap may reach by default. The young generation and the
 * stack are V8's and Node's own defaults, said here with the rest.
 */
export const DEFAULT_THREAD_LIMITS = { maxOldGenerationSizeMb: 512, maxYoungGenerationSizeMb: 48, stackSizeMb: 4 } as const

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
