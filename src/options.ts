import { Ajv } from 'ajv'
import { Type, type Static } from 'typebox'
import { LoadSheddingOptionsSchema, RateLimitOptionsSchema } from '../plugins/limit-options.js'
import { STORE_METHODS, STORE_URL_PATTERN, type PlantStore } from '../plugins/store/index.js'
import { DEFAULT_MAX_TEXT_LENGTH } from '../schemas/index.js'
import { TOKEN_PATTERN } from '../schemas/protocol.js'

export const DEFAULT_BODY_LIMIT = 1024 * 1024

/**
 * The plugin's options. Each description says what a valid value is: it is the message a host
 * gets at registration when that option is wrong.
 */
export const PlantStoreOptionsSchema = Type.Object({
  tokens: Type.Immutable(Type.Array(Type.String({ pattern: TOKEN_PATTERN }), {
    minItems: 1, description: 'a non-empty array of accepted bearer tokens, each of visible ASCII characters'
  })),
  store: Type.Union([
    Type.String({ pattern: STORE_URL_PATTERN }),
    Type.Unsafe<PlantStore>(Type.Object(Object.fromEntries(STORE_METHODS.map((name) => [name, Type.Function([], Type.Unknown())]))))
  ], {
    description: `a store URL (memory:, sqlite:<path of a file>, postgres://…) or an object implementing PlantStore (${STORE_METHODS.join(', ')})`
  }),
  wrapStore: Type.Optional(Type.Unsafe<(store: PlantStore) => PlantStore>(Type.Function([], Type.Unknown(), {
    description: 'a function that takes the store and returns the store the routes use'
  }))),
  bodyLimit: Type.Optional(Type.Integer({
    minimum: 1, description: `the largest request body in bytes, a positive integer (default ${DEFAULT_BODY_LIMIT})`
  })),
  maxTextLength: Type.Optional(Type.Integer({
    minimum: 1, description: `the longest name or tag accepted in characters, a positive integer (default ${DEFAULT_MAX_TEXT_LENGTH})`
  })),
  health: Type.Optional(Type.Boolean({ description: 'true or false: whether to add GET /healthz and GET /readyz (default true)' })),
  pressure: Type.Optional(LoadSheddingOptionsSchema),
  rateLimit: Type.Optional(RateLimitOptionsSchema)
})

export type PlantStoreOptions = Static<typeof PlantStoreOptionsSchema>

/** Options that cannot work, refused when the plugin is registered. */
export class PlantStoreOptionsError extends Error {
  override name = 'PlantStoreOptionsError'
}

interface SchemaNode { description?: string, properties?: Record<string, SchemaNode> }

// The description of the option at a path such as /pressure/maxEventLoopDelay or /tokens/0 (every
// option has one).
function describe (path: string[]): string {
  let node = PlantStoreOptionsSchema as unknown as SchemaNode
  for (const key of path) {
    const next = node.properties?.[key]
    if (next === undefined) break
    node = next
  }
  return node.description!
}

/** The options schema as Ajv reads it: Ajv has no `function` type, a keyword checks those. */
export const OPTIONS_AJV_SCHEMA = JSON.parse(JSON.stringify(PlantStoreOptionsSchema), (_key, node) =>
  node?.type === 'function' ? { isFunction: true } : node)

// Ajv (which the plugin loads anyway) checks the options; typebox/value would add ~100 ms of
// module loading to every host's start-up. validateSchema: see plugins/validation.ts.
const optionsAjv = new Ajv({ allErrors: false, strict: false, validateSchema: false })
optionsAjv.addKeyword({ keyword: 'isFunction', schemaType: 'boolean', validate: (_: boolean, data: unknown) => typeof data === 'function', errors: false })
const validateOptions = optionsAjv.compile(OPTIONS_AJV_SCHEMA)

/** Throws a PlantStoreOptionsError naming the first option that is missing or wrong. */
export function checkOptions (options: unknown): asserts options is PlantStoreOptions {
  if (validateOptions(options)) return
  const [first] = validateOptions.errors!
  const missing = (first.params as { missingProperty?: string }).missingProperty
  const path = [...first.instancePath.split('/').slice(1), ...(missing === undefined ? [] : [missing])]
  const name = path.filter((key) => !/^\d+$/.test(key)).join('.')
  throw new PlantStoreOptionsError(
    `plant-store: option ${name} is ${missing === undefined ? 'invalid' : 'missing'}: it must be ${describe(path)}`)
}
