import { Ajv } from 'ajv'
import { Type, type Static } from 'typebox'
import type { Authenticate } from '../plugins/auth/index.js'
import {
  AuthFailureLimitSchema, LoadSheddingOptionsSchema, RateLimitOptionsSchema, type LoadSheddingOptions, type RateLimitOptions, type WindowLimit
} from '../plugins/http/limit-options.js'
import { isPool, STORE_METHODS, STORE_URL_PATTERN, type PgPool, type PlantStore } from '../plugins/store/index.js'
import type { OpenapiNames } from '../routes/openapi/names.js'
import { DEFAULT_BODY_LIMIT, DEFAULT_MAX_TEXT_LENGTH, MAX_BODY_LIMIT, MAX_TEXT_LENGTH_LIMIT, MAX_TIMER_MS } from '../schemas/index.js'
import { TOKEN_PATTERN } from '../schemas/protocol.js'
import { WebhooksOptionsSchema, type WebhooksOptions } from '../plugins/webhooks/options-schema.js'
import { resolveWebhooks, WebhookSettingError } from '../plugins/webhooks/settings.js'
import type { WebhookObserver } from '../plugins/webhooks/index.js'
import { poolSettingsOf } from '../plugins/webhooks/thread/pool-settings.js'
import { FeedOptionsSchema, type FeedOptions } from '../plugins/feed/settings.js'
import type { FeedHandle } from '../plugins/feed/handle.js'

const functionsNamed = (names: readonly string[], description?: string) =>
  Type.Object(Object.fromEntries(names.map((name) => [name, Type.Function([], Type.Unknown())])), { ...(description !== undefined && { description }) })

// A plain SQL name, which needs no quoting to mean what it says.
const SQL_NAME = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' })
const milliseconds = (minimum: number, description: string) => Type.Optional(Type.Integer({
  minimum, maximum: MAX_TIMER_MS, description: `${description}, in ms, an integer from ${minimum} to ${MAX_TIMER_MS}`
}))

/** Where the PostgreSQL store keeps its plants, and the size of its own pool. */
export const PostgresOptionsSchema = Type.Object({
  schema: Type.Optional(Type.String({ ...SQL_NAME, description: 'the schema of the table (made when missing), a plain SQL name' })),
  table: Type.Optional(Type.String({ ...SQL_NAME, description: 'the table\'s name (default plants), a plain SQL name' })),
  poolSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'the most connections of the plugin\'s own pool, 1 to 1000 (default 10)' })),
  connectionTimeout: milliseconds(1, 'how long to wait for a connection of the plugin\'s own pool (default 1000)'),
  idleTimeout: milliseconds(0, 'how long an idle connection of the plugin\'s own pool is kept, 0 for ever (default 10000)'),
  statementTimeout: milliseconds(1, 'the longest a statement may take before the server cancels it (default 800)')
}, {
  additionalProperties: false,
  description: 'the PostgreSQL store\'s table and pool: { schema?, table?, poolSize?, connectionTimeout?, idleTimeout?, statementTimeout? }'
})

export type PostgresOptions = Static<typeof PostgresOptionsSchema>

const fn = <T>(description: string) => Type.Unsafe<T>(Type.Function([], Type.Unknown(), { description }))
const name = (description: string) => Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._-]+$', description }))

/**
 * The plugin's options. Each description says what a valid value is: it is the message a host
 * gets at registration when that option is wrong. Unknown options are refused.
 */
export const PlantStoreOptionsSchema = Type.Object({
  tokens: Type.Optional(Type.Immutable(Type.Array(Type.String({ pattern: TOKEN_PATTERN }), {
    minItems: 1, description: 'a non-empty array of accepted bearer tokens, each of visible ASCII characters'
  }))),
  authenticate: Type.Optional(fn<Authenticate>(
    'a function (request, reply) returning (or resolving to) a non-empty string naming who the request is from, or false')),
  store: Type.Union([
    Type.String({ pattern: STORE_URL_PATTERN }),
    Type.Unsafe<PlantStore>(functionsNamed(STORE_METHODS)),
    Type.Unsafe<PgPool>(functionsNamed(['connect', 'query', 'end']))
  ], {
    description: `a store URL (memory:, sqlite:<path of a file>, postgres://…) or an object implementing PlantStore (${STORE_METHODS.join(', ')}), or a pg.Pool`
  }),
  postgres: Type.Optional(PostgresOptionsSchema),
  wrapStore: Type.Optional(fn<(store: PlantStore) => PlantStore>('a function that takes the store and returns the store the routes use')),
  bodyLimit: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: MAX_BODY_LIMIT,
    description: `the largest request body in bytes, a positive integer, at most ${MAX_BODY_LIMIT} (default ${DEFAULT_BODY_LIMIT})`
  })),
  maxTextLength: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: MAX_TEXT_LENGTH_LIMIT,
    description: `the longest name or tag accepted in characters, a positive integer, at most ${MAX_TEXT_LENGTH_LIMIT} (default ${DEFAULT_MAX_TEXT_LENGTH})`
  })),
  health: Type.Optional(Type.Boolean({ description: 'true or false: whether to add GET /healthz and GET /readyz (default true)' })),
  notFound: Type.Optional(Type.Boolean({
    description: 'true or false: whether the plugin answers unknown routes under its prefix (default false: the host does)'
  })),
  hostErrors: Type.Optional(Type.Union([Type.Literal('host'), Type.Literal('plugin')], {
    description: '"host" or "plugin": who answers errors the host\'s own hooks raise on the plant routes (default "host")'
  })),
  pressure: Type.Optional(LoadSheddingOptionsSchema),
  rateLimit: Type.Optional(RateLimitOptionsSchema),
  authFailureLimit: Type.Optional(AuthFailureLimitSchema),
  // Unset: no webhook table, worker or timer exists.
  webhooks: Type.Optional(WebhooksOptionsSchema),
  observeWebhooks: Type.Optional(Type.Unsafe<WebhookObserver>(Type.Object({
    event: Type.Function([], Type.Unknown()), attempt: Type.Function([], Type.Unknown()), outbox: Type.Function([], Type.Unknown())
  }, { description: 'an object {event, attempt, outbox} of functions told of webhook events and attempts (for metrics; optionally attempts, a batch of attempt), and optionally tracing {traceContext, attempt, thread?} (for traces; thread: the module a delivery thread starts from to make its attempts\' spans)' }))),
  feed: Type.Optional(FeedOptionsSchema),
  feedHandle: Type.Optional(Type.Unsafe<FeedHandle>(functionsNamed(['attach', 'changes'], 'a handle createFeedHandle() made, whose changes() then follows the change feed in the host\'s own process'))),
  openapi: Type.Optional(Type.Object({
    securityScheme: name('the name of the security scheme the plant routes name, letters, digits, ".", "-" or "_"'),
    plantsTag: name('the tag of the plant routes, letters, digits, ".", "-" or "_"'),
    healthTag: name('the tag of the health routes, letters, digits, ".", "-" or "_"')
  }, { additionalProperties: false, description: 'OpenAPI names: { securityScheme?, plantsTag?, healthTag? }' })),
  routeConfig: Type.Optional(Type.Object({
    plants: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'an object, the route config of the plant routes' })),
    health: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'an object, the route config of the health routes' }))
  }, { additionalProperties: false, description: 'route config for the host\'s plugins: { plants?, health? }' })),
  // Fastify's own register options, which it passes on to the plugin.
  prefix: Type.Optional(Type.String({ description: 'a path prefix' })),
  logLevel: Type.Optional(Type.String({ description: 'a log level' })),
  logSerializers: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'log serializers' }))
}, { additionalProperties: false })

/** Optional keys also take `undefined`, as they do at run time (hosts with exactOptionalPropertyTypes). */
type Loose<T> = { [K in keyof T]?: T[K] | undefined }

/** The plugin's options: `tokens` (the plugin's own bearer tokens) or `authenticate` (the host's), and `store`. */
export interface PlantStoreOptions {
  /** a non-empty array of accepted bearer tokens, each of visible ASCII characters */
  tokens?: readonly string[] | undefined
  /** a function (request, reply) returning (or resolving to) a non-empty string naming who the request is from, or false */
  authenticate?: Authenticate | undefined
  /** a store URL (memory:, sqlite:<path of a file>, postgres://…) or an object implementing PlantStore (create, get, list, delete, ping, close), or a pg.Pool */
  store: string | PgPool | PlantStore
  /**
   * the PostgreSQL store's table and pool: { schema?, table?, poolSize?, connectionTimeout?, idleTimeout?, statementTimeout? }
   * - `schema`: the schema of the table (made when missing), a plain SQL name
   * - `table`: the table's name (default plants), a plain SQL name
   * - `poolSize`: the most connections of the plugin's own pool, 1 to 1000 (default 10)
   * - `connectionTimeout`: how long to wait for a connection of the plugin's own pool (default 1000), in ms, an integer from 1 to 2147483647
   * - `idleTimeout`: how long an idle connection of the plugin's own pool is kept, 0 for ever (default 10000), in ms, an integer from 0 to 2147483647
   * - `statementTimeout`: the longest a statement may take before the server cancels it (default 800), in ms, an integer from 1 to 2147483647
   */
  postgres?: Loose<PostgresOptions> | undefined
  /** a function that takes the store and returns the store the routes use */
  wrapStore?: ((store: PlantStore) => PlantStore) | undefined
  /** the largest request body in bytes, a positive integer, at most 268435456 (default 1048576) */
  bodyLimit?: number | undefined
  /** the longest name or tag accepted in characters, a positive integer, at most 268435456 (default 1000) */
  maxTextLength?: number | undefined
  /** true or false: whether to add GET /healthz and GET /readyz (default true) */
  health?: boolean | undefined
  /** true or false: whether the plugin answers unknown routes under its prefix (default false: the host does) */
  notFound?: boolean | undefined
  /** "host" or "plugin": who answers errors the host's own hooks raise on the plant routes (default "host") */
  hostErrors?: 'host' | 'plugin' | undefined
  /**
   * load shedding thresholds: { maxEventLoopDelay?, maxEventLoopUtilization?, maxHeapUsedBytes?, retryAfter? }
   * - `maxEventLoopDelay`: event-loop delay in ms above which requests are refused (0: off)
   * - `maxEventLoopUtilization`: event-loop utilization, 0 to 1, above which requests are refused (0: off)
   * - `maxHeapUsedBytes`: heap use in bytes above which requests are refused (0: off)
   * - `retryAfter`: seconds a refused client is told to wait (Retry-After)
   */
  pressure?: Loose<LoadSheddingOptions> | undefined
  /**
   * a per-token limit: { max, timeWindow }
   * - `max`: requests allowed per token (or identity) in each window, a positive integer
   * - `timeWindow`: the window in ms, a positive integer, at most 2147483647
   */
  rateLimit?: RateLimitOptions | undefined
  /**
   * false, or { max, timeWindow }: refused credentials allowed per client address (default with tokens 10 per 60000 ms; with authenticate, none)
   * - `max`: failed authentications allowed per client address in each window, a positive integer
   * - `timeWindow`: the window in ms, a positive integer, at most 2147483647
   */
  authFailureLimit?: WindowLimit | false | undefined
  /**
   * webhook endpoints and delivery settings {endpoints, retrySchedule, timeout, allowedNetworks, disableAfter, retention, drainTimeout, delivery, threadResourceLimits}
   * - `endpoints`: a non-empty array of endpoints {name, url, secrets, events}
   * - `endpoints[].name`: a name of 1 to 64 letters, digits, _ . -
   * - `endpoints[].url`: an http:// or https:// URL
   * - `endpoints[].secrets`: a non-empty array of secrets, each whsec_ followed by the base64 of 24 to 64 random bytes
   * - `endpoints[].events`: a non-empty array of plant.created, plant.deleted, plant.updated (default plant.created)
   * - `retrySchedule`: a non-empty array of waits in ms after each failed attempt (default Standard Webhooks' table)
   * - `timeout`: the longest attempt in ms (default 15000)
   * - `allowedNetworks`: CIDRs (e.g. 127.0.0.0/8) reachable although private or loopback
   * - `disableAfter`: ms without a successful delivery after which an endpoint is disabled (default 5 days)
   * - `retention`: ms that finished events are kept (default 7 days)
   * - `drainTimeout`: ms that attempts in flight get to finish when the app closes (default: timeout)
   * - `delivery`: where this app delivers: thread, in-process, off (default thread; the memory store or a store object deliver in-process, and so does a pg.Pool unless delivery is thread, which then runs on a pool of its own made from the pool's settings)
   * - `threadResourceLimits`: the delivery thread's memory limits in MB, past which it ends alone and is started again: { maxOldGenerationSizeMb?, maxYoungGenerationSizeMb?, stackSizeMb? }
   * - `threadResourceLimits.maxOldGenerationSizeMb`: the delivery thread's main heap, in MB, an integer from 16 to 65536 (default 512)
   * - `threadResourceLimits.maxYoungGenerationSizeMb`: the heap of its new objects, in MB, an integer from 1 to 65536 (default 48)
   * - `threadResourceLimits.stackSizeMb`: its stack, in MB, an integer from 1 to 65536 (default 4)
   */
  webhooks?: WebhooksOptions | undefined
  /** an object {event, attempt, outbox} of functions told of webhook events and attempts (for metrics; optionally attempts, a batch of attempt), and optionally tracing {traceContext, attempt, thread?} (for traces; thread: the module a delivery thread starts from to make its attempts' spans) */
  observeWebhooks?: WebhookObserver | undefined
  /**
   * false, or the change feed's settings {retention, maxWaiters, maxWaitersPerToken, heartbeat, streamLifetime} (default: on, GET /plants/changes)
   * - `retention`: ms that events are kept for the feed (default 7 days)
   * - `maxWaiters`: the most long-polls and event streams at once in this process (default 10000)
   * - `maxWaitersPerToken`: the most long-polls and event streams at once for one token or identity (default 100)
   * - `heartbeat`: ms between the comment lines that keep an idle event stream open (default 15000)
   * - `streamLifetime`: ms after which an event stream ends, for its client to resume (default 300000)
   */
  feed?: FeedOptions | undefined
  /** a handle createFeedHandle() made, whose changes() then follows the change feed in the host's own process */
  feedHandle?: FeedHandle | undefined
  /**
   * OpenAPI names: { securityScheme?, plantsTag?, healthTag? }
   * - `securityScheme`: the name of the security scheme the plant routes name, letters, digits, ".", "-" or "_"
   * - `plantsTag`: the tag of the plant routes, letters, digits, ".", "-" or "_"
   * - `healthTag`: the tag of the health routes, letters, digits, ".", "-" or "_"
   */
  openapi?: OpenapiNames | undefined
  /**
   * route config for the host's plugins: { plants?, health? }
   * - `plants`: an object, the route config of the plant routes
   * - `health`: an object, the route config of the health routes
   */
  routeConfig?: Loose<{ plants: Record<string, unknown>, health: Record<string, unknown> }> | undefined
}

// The interface above and the schema describe the same options: checked both ways at compile time.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Assert<T extends true> = T
export type OptionsMatchSchema = Assert<Same<Required<PlantStoreOptions>, Required<Omit<Static<typeof PlantStoreOptionsSchema>, 'prefix' | 'logLevel' | 'logSerializers'>>>>

/** Options that cannot work, refused when the plugin is registered. */
export class PlantStoreOptionsError extends Error {
  override name = 'PlantStoreOptionsError'
}

interface SchemaNode { description?: string, properties?: Record<string, SchemaNode>, items?: SchemaNode }

// The option at a path such as /pressure/maxEventLoopDelay or /tokens/0 (every option has a
// description; an array's entry is an option of its own only where it has one: an endpoint).
function nodeAt (path: string[]): SchemaNode {
  let node = PlantStoreOptionsSchema as unknown as SchemaNode
  for (const key of path) {
    const next = /^\d+$/.test(key) && node.items?.description !== undefined ? node.items : node.properties?.[key]
    if (next === undefined) break
    node = next
  }
  return node
}

/** The options schema as Ajv reads it: Ajv has no `function` type, a keyword checks those. */
export const OPTIONS_AJV_SCHEMA = JSON.parse(JSON.stringify(PlantStoreOptionsSchema), (_key, node) =>
  node?.type === 'function' ? { isFunction: true } : node)

// Ajv (which the plugin loads anyway) checks the options; typebox/value would add ~100 ms of
// module loading to every host's start-up. validateSchema: see plugins/http/validation.ts.
const optionsAjv = new Ajv({ allErrors: false, strict: false, validateSchema: false })
optionsAjv.addKeyword({ keyword: 'isFunction', schemaType: 'boolean', validate: (_: boolean, data: unknown) => typeof data === 'function', errors: false })
const validateOptions = optionsAjv.compile(OPTIONS_AJV_SCHEMA)

const fail = (message: string) => new PlantStoreOptionsError(`plant-store: ${message}`)
const dotted = (path: string[]) => path.filter((key) => !/^\d+$/.test(key)).join('.')

/** An unknown option, with the known ones beside it (a misspelling is seen at once). */
function unknownOption (path: string[], known: string[]) {
  const where = path.length > 1 ? `${dotted(path.slice(0, -1))} takes` : 'the options are'
  return fail(`option ${dotted(path)} is unknown: ${where} ${known.join(', ')}`)
}

/** Throws a PlantStoreOptionsError naming the first option that is missing, unknown or wrong. */
export function checkOptions (options: unknown): asserts options is PlantStoreOptions {
  // Authentication first: it is the option a host thinks of first, and either of two will do.
  const { tokens, authenticate } = options as { tokens?: unknown, authenticate?: unknown }
  if (tokens === undefined && authenticate === undefined) {
    throw fail(`option tokens is missing: it must be ${nodeAt(['tokens']).description!} (or give authenticate, for the host's own authentication)`)
  }
  if (tokens !== undefined && authenticate !== undefined) {
    throw fail('options tokens and authenticate exclude each other: give tokens for the plugin\'s bearer tokens, or authenticate for the host\'s authentication')
  }
  if (validateOptions(options)) {
    checkWebhooks(options as PlantStoreOptions)
    return
  }
  const [first] = validateOptions.errors!
  const { missingProperty: missing, additionalProperty: unknown } = first.params as { missingProperty?: string, additionalProperty?: string }
  const path = [...first.instancePath.split('/').slice(1), ...[missing ?? unknown].filter((key) => key !== undefined)]
  if (unknown !== undefined) {
    const known = Object.keys(nodeAt(path.slice(0, -1)).properties!).filter((key) => !['prefix', 'logLevel', 'logSerializers'].includes(key))
    throw unknownOption(path, known)
  }
  throw fail(`option ${dotted(path)} is ${missing === undefined ? 'invalid' : 'missing'}: it must be ${nodeAt(path).description!}`)
}

// What the schema cannot check (secrets, URLs, networks; a pool's settings for a delivery thread), refused at registration too.
function checkWebhooks ({ webhooks, store }: PlantStoreOptions): void {
  if (webhooks === undefined) return
  try {
    resolveWebhooks(webhooks)
    if (webhooks.delivery === 'thread' && isPool(store)) poolSettingsOf(store)
  } catch (error) {
    const { setting, problem, fix } = error as WebhookSettingError
    throw fail(`option ${setting} is invalid: it ${problem}; ${fix}`)
  }
}
