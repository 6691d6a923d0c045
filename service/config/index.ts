import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import addFormatsModule from 'ajv-formats'
import envSchema from 'env-schema'
import { Type, type Static } from 'typebox'
import { isAcceptableToken } from '../../schemas/protocol.js'
import { DEFAULT_AUTH_FAILURE_LIMIT, DEFAULT_DATABASE_URL, LoadSheddingOptionsSchema, RateLimitOptionsSchema, STORE_URL_PATTERN, parseDuration, WebhookSettingError, type WebhooksOptions } from '../../src/service-settings.js'
import { DEFAULT_BODY_LIMIT, DEFAULT_MAX_TEXT_LENGTH, MAX_BODY_LIMIT, MAX_TEXT_LENGTH_LIMIT, MAX_TIMER_MS } from '../../schemas/index.js'
import { TracingSettings } from '../observe/tracing/settings.js'
import { MAX_SETTING_FILE_BYTES, readSettingFile } from './setting-file.js'
import { readWebhooksEnv, roleFromEnv, WebhookSettings, type ServiceRole } from './webhooks.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/** The shortest token NODE_ENV=production accepts: 16 random characters resist guessing at any rate. */
export const MIN_PRODUCTION_TOKEN_LENGTH = 16

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

// The bounds of the plugin options these settings feed are written once, with the options.
const boundsOf = (option: unknown) => option as { minimum: number, maximum?: number }
const utilization = boundsOf(LoadSheddingOptionsSchema.properties.maxEventLoopUtilization)
const rateWindow = boundsOf(RateLimitOptionsSchema.properties.timeWindow)

export { MAX_SETTING_FILE_BYTES }
export const MAX_TOKENS_FILE_BYTES = MAX_SETTING_FILE_BYTES

/** A duration setting in ms, within what a Node timer can hold. */
const Duration = (options: { minimum: number, default: number, description: string }) =>
  Type.Integer({ ...options, maximum: MAX_TIMER_MS, description: `${options.description}, at most ${MAX_TIMER_MS}` })

/** An address to listen on: a host name or an IPv4/IPv6 address. */
const Host = (options: { default?: string, description: string }) =>
  Type.Union([Type.String({ format: 'hostname' }), Type.String({ format: 'ipv6' })], options)

/** Apache's LimitRequestFields: far more than any client sends (browsers send ~20). */
export const DEFAULT_MAX_HEADERS_COUNT = 100

/** Where the metrics listener binds by default: off the public network. */
export const DEFAULT_METRICS_HOST = '127.0.0.1'

/** The values of DOCS. */
const SWITCH = ['on', 'off'] as const

/** The service's settings, read from the environment. Each description says how to set it right. */
export const ConfigSchema = Type.Object({
  HOST: Host({ default: '127.0.0.1', description: 'the address to listen on: a host name or an IPv4/IPv6 address' }),
  PORT: Type.Integer({
    minimum: 0, maximum: 65535, default: 3000, description: 'the TCP port to listen on, 0 to 65535 (0 picks a free one)'
  }),
  METRICS_HOST: Type.Optional(Host({
    description: `the address the metrics listener (METRICS_PORT) binds: a host name or an IPv4/IPv6 address (default ${DEFAULT_METRICS_HOST})`
  })),
  METRICS_PORT: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: 'the TCP port of a listener of its own for /metrics, 0 to 65535 (0 picks a free one), another than PORT (unset: /metrics is on PORT)'
  })),
  DOCS: Type.Enum(SWITCH, {
    default: 'on', description: 'on or off: whether /documentation (Swagger UI and the OpenAPI document) is served'
  }),
  DATABASE_URL: Type.String({
    pattern: STORE_URL_PATTERN,
    default: DEFAULT_DATABASE_URL,
    description: 'the store: sqlite:<path of a file>, postgres://user@host:port/database or memory:'
  }),
  API_TOKENS: Type.Optional(Type.String({ description: 'accepted bearer tokens, comma-separated' })),
  API_TOKENS_FILE: Type.Optional(Type.String({
    description: `a regular file of accepted bearer tokens, one a line, at most ${MAX_TOKENS_FILE_BYTES} bytes`
  })),
  LOG_LEVEL: Type.Enum(LOG_LEVELS, { default: 'info', description: `one of ${LOG_LEVELS.join(', ')}` }),
  BODY_LIMIT: Type.Integer({
    minimum: 1, maximum: MAX_BODY_LIMIT, default: DEFAULT_BODY_LIMIT, description: `the largest request body in bytes, a positive integer, at most ${MAX_BODY_LIMIT}`
  }),
  MAX_TEXT_LENGTH: Type.Integer({
    minimum: 1,
    maximum: MAX_TEXT_LENGTH_LIMIT,
    default: DEFAULT_MAX_TEXT_LENGTH,
    description: `the longest plant name or tag in characters, a positive integer, at most ${MAX_TEXT_LENGTH_LIMIT}`
  }),
  SHUTDOWN_TIMEOUT: Duration({
    minimum: 0, default: 10000, description: 'the grace period for in-flight requests on shutdown, in ms'
  }),
  NODE_ENV: Type.Optional(Type.String({
    description: `production refuses to start without tokens, or with a token shorter than ${MIN_PRODUCTION_TOKEN_LENGTH} characters`
  })),
  REQUEST_TIMEOUT: Duration({
    minimum: 0, default: 30000, description: 'the longest time to receive a whole request, in ms (0: no limit)'
  }),
  CONNECTION_TIMEOUT: Duration({
    minimum: 0, default: 60000, description: 'how long a connection may stay silent, in ms (0: no limit)'
  }),
  HEADERS_TIMEOUT: Duration({
    minimum: 1, default: 10000, description: 'the longest time to receive the request headers, in ms, at most REQUEST_TIMEOUT'
  }),
  KEEP_ALIVE_TIMEOUT: Duration({
    minimum: 1, default: 72000, description: 'how long an idle keep-alive connection stays open, in ms'
  }),
  MAX_CONNECTIONS: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'the most client connections open at once, within what the open-files limit allows (0: derived from that limit)'
  }),
  TOKENLESS_CONNECTION_SHARE: Type.Number({
    minimum: 0.01,
    maximum: 1,
    default: 0.5,
    description: 'the share of MAX_CONNECTIONS, from 0.01 to 1, that connections without a verified token may hold; the rest stays for clients with one (1: no reserve)'
  }),
  MAX_HEADER_SIZE: Type.Integer({
    minimum: 1024, default: 16384, description: 'the largest request header block in bytes (431 above it)'
  }),
  MAX_HEADERS_COUNT: Type.Integer({
    minimum: 1, default: DEFAULT_MAX_HEADERS_COUNT, description: 'the most header fields a request may have, a positive integer (431 above it)'
  }),
  BODY_MIN_RATE: Type.Integer({
    minimum: 0,
    default: 1024,
    description: 'the slowest average, in bytes per second, at which a request body may arrive once BODY_RATE_GRACE has passed (408 below it; 0: no minimum)'
  }),
  BODY_RATE_GRACE: Duration({
    minimum: 1, default: 5000, description: 'how long a request body may take before BODY_MIN_RATE applies, in ms'
  }),
  PRESSURE_MAX_EVENT_LOOP_DELAY: Duration({
    minimum: 0, default: 1000, description: 'event-loop delay in ms above which requests get 503 (0: off)'
  }),
  PRESSURE_MAX_EVENT_LOOP_UTILIZATION: Type.Number({
    // The option's own bounds. Off by default: a busy but healthy server runs near 1 under load.
    minimum: utilization.minimum,
    maximum: utilization.maximum,
    default: 0,
    description: 'event-loop utilization (0 to 1) above which requests get 503 (0: off)'
  }),
  PRESSURE_MAX_HEAP_USED_BYTES: Type.Integer({
    minimum: 0, default: 0, description: 'heap use in bytes above which requests get 503 (0: off)'
  }),
  RATE_LIMIT_MAX: Type.Integer({
    minimum: 0, default: 0, description: 'requests allowed per token per RATE_LIMIT_WINDOW (0: no rate limit)'
  }),
  CORS_ORIGINS: Type.String({
    // Origins as browsers send them: scheme, host and port, no path.
    pattern: '^\\s*(?:https?://[^/,\\s]+\\s*(?:,\\s*https?://[^/,\\s]+\\s*)*)?$',
    default: '',
    description: 'the origins whose pages may call the API from a browser (CORS), comma-separated, such as https://app.example,http://127.0.0.1:8080 (empty: none)'
  }),
  RATE_LIMIT_WINDOW: Duration({
    minimum: rateWindow.minimum, default: 60000, description: 'the rate limit window, in ms'
  }),
  AUTH_FAILURE_MAX: Type.Integer({
    minimum: 0,
    default: DEFAULT_AUTH_FAILURE_LIMIT.max,
    description: 'wrong tokens allowed per client address per AUTH_FAILURE_WINDOW, then 429 for a wrong one (0: no limit)'
  }),
  AUTH_FAILURE_WINDOW: Duration({
    minimum: rateWindow.minimum, default: DEFAULT_AUTH_FAILURE_LIMIT.timeWindow, description: 'the failed-authentication window, in ms'
  }),
  // Checked by trustProxy: a list of addresses and networks.
  TRUST_PROXY: Type.Optional(Type.String({
    description: 'the proxies whose X-Forwarded-For is believed: their addresses or CIDRs (or loopback, linklocal, uniquelocal), comma-separated, or true for any peer (unset: none)'
  })),
  FEED: Type.Enum(SWITCH, {
    default: 'on', description: 'on or off: whether every create, update and delete writes its event for GET /plants/changes (off: that route is 404)'
  }),
  FEED_RETENTION: Type.String({
    default: '168h', description: 'how long events are kept for GET /plants/changes, a duration such as 168h (a webhook delivery that needs one keeps it longer)'
  }),
  ...WebhookSettings,
  ...TracingSettings
})

export type Config = Static<typeof ConfigSchema>

/** A setting that cannot be used; its message is one line that names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

interface AjvError { instancePath: string, message?: string }

function configError (errors: AjvError[]): ConfigError {
  const [first] = errors
  // Every setting has a default or is optional, so an error is always about a value given.
  const name = first.instancePath.slice(1)
  const { description } = ConfigSchema.properties[name as keyof Config] as unknown as { description: string }
  return new ConfigError(`Invalid configuration: ${name} ${first.message}; set ${name} to ${description}.`)
}

const invalid = (name: string, problem: string, fix: string) => new ConfigError(`Invalid configuration: ${name} ${problem}; ${fix}.`)

/** Reads and checks the settings: throws a ConfigError naming the first bad variable. */
export function loadConfig (env: Record<string, string | undefined>): Config {
  let config: Config
  try {
    config = envSchema<Config>({
      schema: structuredClone(ConfigSchema),
      data: env,
      env: false,
      ajv: { customOptions: (ajv) => addFormats(ajv as never) as never }
    })
  } catch (error) {
    throw configError((error as { errors: AjvError[] }).errors)
  }
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (config.REQUEST_TIMEOUT > 0 && config.HEADERS_TIMEOUT > config.REQUEST_TIMEOUT) {
    throw invalid('HEADERS_TIMEOUT', `(${config.HEADERS_TIMEOUT}) is longer than REQUEST_TIMEOUT (${config.REQUEST_TIMEOUT})`,
      'set HEADERS_TIMEOUT to at most REQUEST_TIMEOUT, or REQUEST_TIMEOUT to 0')
  }
  trustProxy(config)
  if (config.METRICS_HOST !== undefined && config.METRICS_PORT === undefined) {
    throw invalid('METRICS_HOST', 'is set without METRICS_PORT, so nothing would listen there', 'set METRICS_PORT too, or remove METRICS_HOST')
  }
  if (config.METRICS_PORT !== undefined && config.METRICS_PORT !== 0 && config.METRICS_PORT === config.PORT) {
    throw invalid('METRICS_PORT', `(${config.METRICS_PORT}) is PORT's port`,
      'set METRICS_PORT to another port, or remove it to serve /metrics on PORT')
  }
  return config
}

/** Where the metrics listener listens (METRICS_HOST, METRICS_PORT); undefined: /metrics is on the API's port. */
export function metricsAddress (config: Pick<Config, 'METRICS_HOST' | 'METRICS_PORT'>): { host: string, port: number } | undefined {
  return config.METRICS_PORT === undefined ? undefined : { host: config.METRICS_HOST ?? DEFAULT_METRICS_HOST, port: config.METRICS_PORT }
}

// The names of networks Fastify (@fastify/proxy-addr) knows.
const NAMED_NETWORKS = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** An address, a CIDR (address/prefix length) or a named network. */
function isProxyEntry (entry: string): boolean {
  if (NAMED_NETWORKS.has(entry)) return true
  const [address, prefix, ...rest] = entry.split('/')
  const version = isIP(address)
  if (version === 0 || rest.length > 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128))
}

/**
 * Fastify's `trustProxy` from TRUST_PROXY: whose X-Forwarded-For names the client (request.ip, which
 * the failure throttle and the log use). A hop count is refused: Fastify (5.12.1 on) ignores one,
 * since a count cannot tell the proxy from a client that writes the header itself.
 */
export function trustProxy (config: Pick<Config, 'TRUST_PROXY'>): boolean | string[] {
  const value = config.TRUST_PROXY?.trim() ?? ''
  if (value === '' || value === 'false') return false
  if (value === 'true') return true
  const fix = 'set TRUST_PROXY to the addresses or CIDRs of your proxies, comma-separated (e.g. 127.0.0.1 or 10.0.0.0/8,::1), or to true when only proxies can reach the service'
  if (/^\d+$/.test(value)) throw invalid('TRUST_PROXY', `(${value}) is a hop count, which Fastify ignores: it cannot tell a proxy from a client that writes X-Forwarded-For itself`, fix)
  const entries = value.split(',').map((entry) => entry.trim())
  const wrong = entries.find((entry) => !isProxyEntry(entry))
  if (wrong !== undefined) throw invalid('TRUST_PROXY', `holds ${JSON.stringify(wrong)}, which is not an IP address, a CIDR or loopback, linklocal, uniquelocal`, fix)
  return entries
}

/**
 * Trimmed tokens, without empty entries; one that no Authorization header can carry is refused, and
 * with NODE_ENV=production one too short to resist guessing.
 */
function tokensFrom (name: string, entries: string[], entry: string, production: boolean): string[] {
  const tokens = entries.map((token) => token.trim())
  const unsendable = tokens.findIndex((token) => token !== '' && !isAcceptableToken(token))
  if (unsendable >= 0) {
    // The token itself is a secret: the line says where it is, not what it is.
    throw invalid(name, `${entry} ${unsendable + 1} holds a space or a character outside visible ASCII, which no Authorization header can carry, so it could never match`,
      `set ${name} to tokens of visible ASCII characters`)
  }
  const short = tokens.findIndex((token) => token !== '' && token.length < MIN_PRODUCTION_TOKEN_LENGTH)
  if (production && short >= 0) {
    throw invalid(name, `${entry} ${short + 1} is shorter than ${MIN_PRODUCTION_TOKEN_LENGTH} characters, which NODE_ENV=production refuses: it could be guessed`,
      `set ${name} to tokens of at least ${MIN_PRODUCTION_TOKEN_LENGTH} random characters (e.g. openssl rand -base64 24)`)
  }
  return tokens.filter(Boolean)
}

/** A webhook setting refused (service/config/webhooks.ts throws only WebhookSettingError), as the one line of a ConfigError. */
function asConfigError<T> (read: () => T): T {
  try {
    return read()
  } catch (error) {
    const { setting, problem, fix } = error as WebhookSettingError
    throw invalid(setting, problem, fix)
  }
}

/** What this instance does (API, WEBHOOK_DELIVERY): serve the API or not, and where it delivers. */
export const serviceRole = (config: Config): ServiceRole => asConfigError(() => roleFromEnv(config))

/** The `webhooks` option from the WEBHOOK_* settings, its delivery the role's; undefined (feature off) when no endpoint is set. */
export function readWebhooks (config: Config): WebhooksOptions | undefined {
  return asConfigError(() => readWebhooksEnv(config, (path) => readSettingFile(path, (problem) => new WebhookSettingError('WEBHOOK_ENDPOINTS_FILE', problem,
    `set it to a readable regular file holding a JSON array of endpoints {name, url, secrets, events}, at most ${MAX_SETTING_FILE_BYTES} bytes`))))
}

/** The `feed` option from FEED and FEED_RETENTION: false when off. */
export function readFeedSettings (config: Pick<Config, 'FEED' | 'FEED_RETENTION'>): false | { retention: number } {
  if (config.FEED === 'off') return false
  const retention = asConfigError(() => parseDuration(config.FEED_RETENTION, 'FEED_RETENTION'))
  if (retention === 0) throw invalid('FEED_RETENTION', 'is 0', 'set it to a positive duration such as 168h')
  return { retention }
}

const tokensFileError = (problem: string) => invalid('API_TOKENS_FILE', problem,
  `set it to a readable regular file of tokens, one a line, at most ${MAX_TOKENS_FILE_BYTES} bytes`)

/** The tokens of API_TOKENS and API_TOKENS_FILE together, trimmed, without empty entries. */
export function readTokens (config: Pick<Config, 'API_TOKENS' | 'API_TOKENS_FILE'> & { NODE_ENV?: string | undefined }): string[] {
  const production = config.NODE_ENV === 'production'
  const listed = tokensFrom('API_TOKENS', config.API_TOKENS?.split(',') ?? [], 'entry', production)
  const filed = config.API_TOKENS_FILE === undefined
    ? []
    : tokensFrom('API_TOKENS_FILE', readSettingFile(config.API_TOKENS_FILE, tokensFileError).split('\n'), 'line', production)
  return [...new Set([...listed, ...filed])]
}

/** The process's limit of open files (the soft RLIMIT_NOFILE), where /proc tells it (Linux). */
export function openFilesLimit (limits = '/proc/self/limits'): number | undefined {
  try {
    const line = readFileSync(limits, 'utf8').split('\n').find((candidate) => candidate.startsWith('Max open files'))
    const soft = Number(line?.split(/ {2,}/)[1])
    // "unlimited" is not a number: there is no limit to derive from.
    return Number.isSafeInteger(soft) ? soft : undefined
  } catch {
    return undefined
  }
}

// Descriptors kept for everything but client connections: the store's files or pool, the log, /proc.
const RESERVED_FILES = 64
// About 10 KB of memory per open connection: the default stays within ~100 MB.
const DEFAULT_MAX_CONNECTIONS = 10_000

/**
 * MAX_CONNECTIONS, or its default. A connection takes a file descriptor, and may take a second
 * one (a file it is being sent): connections may use half of what RESERVED_FILES leaves, so that
 * a flood of them can never exhaust the descriptors the rest of the process needs.
 */
export function connectionLimit (config: Pick<Config, 'MAX_CONNECTIONS'>, fdLimit: number | undefined): number {
  const fits = fdLimit === undefined ? Infinity : Math.max(1, Math.floor((fdLimit - RESERVED_FILES) / 2))
  if (config.MAX_CONNECTIONS === 0) return Math.min(fits, DEFAULT_MAX_CONNECTIONS)
  if (config.MAX_CONNECTIONS > fits) {
    throw invalid('MAX_CONNECTIONS', `(${config.MAX_CONNECTIONS}) needs more file descriptors than the open-files limit (ulimit -n) of ${fdLimit} allows`,
      `set MAX_CONNECTIONS to at most ${fits}, or raise the limit`)
  }
  return config.MAX_CONNECTIONS
}

/** The most connections without a verified token (TOKENLESS_CONNECTION_SHARE of `maxConnections`), at least one. */
export const tokenlessLimit = (config: Pick<Config, 'TOKENLESS_CONNECTION_SHARE'>, maxConnections: number) =>
  Math.max(1, Math.floor(maxConnections * config.TOKENLESS_CONNECTION_SHARE))

/** The origins of CORS_ORIGINS, trimmed, without empty entries. */
export const corsOrigins = (config: Pick<Config, 'CORS_ORIGINS'>) => config.CORS_ORIGINS.split(',').map((origin) => origin.trim()).filter(Boolean)
