import { readFileSync } from 'node:fs'
import addFormatsModule from 'ajv-formats'
import envSchema from 'env-schema'
import { Type, type Static } from 'typebox'
import { isAcceptableToken } from '../schemas/protocol.js'
import { LoadSheddingOptionsSchema, RateLimitOptionsSchema } from '../plugins/limit-options.js'
import { STORE_URL_PATTERN } from '../plugins/store/index.js'
import { DEFAULT_MAX_TEXT_LENGTH, MAX_TIMER_MS } from '../schemas/index.js'
import { DEFAULT_BODY_LIMIT } from './options.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

// The bounds of the plugin options these settings feed are written once, with the options.
const boundsOf = (option: unknown) => option as { minimum: number, maximum?: number }
const utilization = boundsOf(LoadSheddingOptionsSchema.properties.maxEventLoopUtilization)
const rateWindow = boundsOf(RateLimitOptionsSchema.properties.timeWindow)

/** A duration setting in ms, within what a Node timer can hold. */
const Duration = (options: { minimum: number, default: number, description: string }) =>
  Type.Integer({ ...options, maximum: MAX_TIMER_MS, description: `${options.description}, at most ${MAX_TIMER_MS}` })

/** The service's settings, read from the environment. Each description says how to set it right. */
export const ConfigSchema = Type.Object({
  HOST: Type.Union([Type.String({ format: 'hostname' }), Type.String({ format: 'ipv6' })], {
    default: '127.0.0.1', description: 'the address to listen on: a host name or an IPv4/IPv6 address'
  }),
  PORT: Type.Integer({
    minimum: 0, maximum: 65535, default: 3000, description: 'the TCP port to listen on, 0 to 65535 (0 picks a free one)'
  }),
  DATABASE_URL: Type.String({
    pattern: STORE_URL_PATTERN,
    default: 'sqlite:./data/plants.db',
    description: 'the store: sqlite:<path of a file>, postgres://user@host:port/database or memory:'
  }),
  API_TOKENS: Type.Optional(Type.String({ description: 'accepted bearer tokens, comma-separated' })),
  API_TOKENS_FILE: Type.Optional(Type.String({ description: 'a file of accepted bearer tokens, one a line' })),
  LOG_LEVEL: Type.Enum(LOG_LEVELS, { default: 'info', description: `one of ${LOG_LEVELS.join(', ')}` }),
  BODY_LIMIT: Type.Integer({
    minimum: 1, default: DEFAULT_BODY_LIMIT, description: 'the largest request body in bytes, a positive integer'
  }),
  MAX_TEXT_LENGTH: Type.Integer({
    minimum: 1, default: DEFAULT_MAX_TEXT_LENGTH, description: 'the longest plant name or tag in characters, a positive integer'
  }),
  SHUTDOWN_TIMEOUT: Duration({
    minimum: 0, default: 10000, description: 'the grace period for in-flight requests on shutdown, in ms'
  }),
  NODE_ENV: Type.Optional(Type.String({ description: 'production refuses to start without tokens' })),
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
  MAX_HEADER_SIZE: Type.Integer({
    minimum: 1024, default: 16384, description: 'the largest request header block in bytes (431 above it)'
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
  RATE_LIMIT_WINDOW: Duration({
    minimum: rateWindow.minimum, default: 60000, description: 'the rate limit window, in ms'
  })
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
  return config
}

/** Trimmed tokens, without empty entries; one that no Authorization header can carry is refused. */
function tokensFrom (name: string, entries: string[], entry: string): string[] {
  const tokens = entries.map((token) => token.trim())
  const unsendable = tokens.findIndex((token) => token !== '' && !isAcceptableToken(token))
  if (unsendable >= 0) {
    // The token itself is a secret: the line says where it is, not what it is.
    throw invalid(name, `${entry} ${unsendable + 1} holds a space or a character outside visible ASCII, which no Authorization header can carry, so it could never match`,
      `set ${name} to tokens of visible ASCII characters`)
  }
  return tokens.filter(Boolean)
}

/** The tokens of API_TOKENS and API_TOKENS_FILE together, trimmed, without empty entries. */
export function readTokens (config: Pick<Config, 'API_TOKENS' | 'API_TOKENS_FILE'>): string[] {
  const listed = tokensFrom('API_TOKENS', config.API_TOKENS?.split(',') ?? [], 'entry')
  let filed: string[] = []
  if (config.API_TOKENS_FILE !== undefined) {
    let text: string
    try {
      text = readFileSync(config.API_TOKENS_FILE, 'utf8')
    } catch (error) {
      throw new ConfigError(`Invalid configuration: API_TOKENS_FILE cannot be read (${(error as NodeJS.ErrnoException).code}); set it to a readable file of tokens, one a line.`)
    }
    filed = tokensFrom('API_TOKENS_FILE', text.split('\n'), 'line')
  }
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
