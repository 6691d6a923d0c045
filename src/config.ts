import { readFileSync } from 'node:fs'
import addFormatsModule from 'ajv-formats'
import envSchema from 'env-schema'
import { Type, type Static } from 'typebox'
import { STORE_URL_PATTERN } from '../plugins/store/index.js'
import { DEFAULT_BODY_LIMIT } from './plugin.js'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

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
    description: 'the store: sqlite:<path>, postgres://user@host:port/database or memory:'
  }),
  API_TOKENS: Type.Optional(Type.String({ description: 'accepted bearer tokens, comma-separated' })),
  API_TOKENS_FILE: Type.Optional(Type.String({ description: 'a file of accepted bearer tokens, one a line' })),
  LOG_LEVEL: Type.Enum(LOG_LEVELS, { default: 'info', description: `one of ${LOG_LEVELS.join(', ')}` }),
  BODY_LIMIT: Type.Integer({
    minimum: 1, default: DEFAULT_BODY_LIMIT, description: 'the largest request body in bytes, a positive integer'
  }),
  SHUTDOWN_TIMEOUT: Type.Integer({
    minimum: 0, default: 10000, description: 'the grace period for in-flight requests on shutdown, in ms'
  }),
  NODE_ENV: Type.Optional(Type.String({ description: 'production refuses to start without tokens' })),
  REQUEST_TIMEOUT: Type.Integer({
    minimum: 0, default: 30000, description: 'the longest time to receive a whole request, in ms (0: no limit)'
  }),
  CONNECTION_TIMEOUT: Type.Integer({
    minimum: 0, default: 60000, description: 'how long a connection may stay silent mid-request, in ms (0: no limit)'
  }),
  HEADERS_TIMEOUT: Type.Integer({
    minimum: 1, default: 10000, description: 'the longest time to receive the request headers, in ms'
  }),
  KEEP_ALIVE_TIMEOUT: Type.Integer({
    minimum: 1, default: 72000, description: 'how long an idle keep-alive connection stays open, in ms'
  }),
  MAX_HEADER_SIZE: Type.Integer({
    minimum: 1024, default: 16384, description: 'the largest request header block in bytes (431 above it)'
  }),
  PRESSURE_MAX_EVENT_LOOP_DELAY: Type.Integer({
    minimum: 0, default: 1000, description: 'event-loop delay in ms above which requests get 503 (0: off)'
  }),
  PRESSURE_MAX_EVENT_LOOP_UTILIZATION: Type.Number({
    // Off by default: a busy but healthy server runs near 1 under load.
    minimum: 0, maximum: 1, default: 0, description: 'event-loop utilization (0 to 1) above which requests get 503 (0: off)'
  }),
  PRESSURE_MAX_HEAP_USED_BYTES: Type.Integer({
    minimum: 0, default: 0, description: 'heap use in bytes above which requests get 503 (0: off)'
  }),
  RATE_LIMIT_MAX: Type.Integer({
    minimum: 0, default: 0, description: 'requests allowed per token per RATE_LIMIT_WINDOW (0: no rate limit)'
  }),
  RATE_LIMIT_WINDOW: Type.Integer({
    minimum: 1, default: 60000, description: 'the rate limit window, in ms'
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

/** Reads and checks the settings: throws a ConfigError naming the first bad variable. */
export function loadConfig (env: Record<string, string | undefined>): Config {
  try {
    return envSchema<Config>({
      schema: structuredClone(ConfigSchema),
      data: env,
      env: false,
      ajv: { customOptions: (ajv) => addFormats(ajv as never) as never }
    })
  } catch (error) {
    throw configError((error as { errors: AjvError[] }).errors)
  }
}

/** The tokens of API_TOKENS and API_TOKENS_FILE together, trimmed, without empty entries. */
export function readTokens (config: Pick<Config, 'API_TOKENS' | 'API_TOKENS_FILE'>): string[] {
  const listed = config.API_TOKENS?.split(',') ?? []
  let filed: string[] = []
  if (config.API_TOKENS_FILE !== undefined) {
    try {
      filed = readFileSync(config.API_TOKENS_FILE, 'utf8').split('\n')
    } catch (error) {
      throw new ConfigError(`Invalid configuration: API_TOKENS_FILE cannot be read (${(error as NodeJS.ErrnoException).code}); set it to a readable file of tokens, one a line.`)
    }
  }
  return [...new Set([...listed, ...filed].map((token) => token.trim()).filter(Boolean))]
}
