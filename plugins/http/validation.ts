import { Ajv, type AnySchema, type FuncKeywordDefinition, type Options } from 'ajv'
import type { FastifySchemaValidationError } from 'fastify'
import fp from 'fastify-plugin'
import { INT64_MAX, INT64_MIN, STORABLE_TEXT_PATTERN, STORABLE_TEXT_RULE, sharedSchemas } from '../../schemas/index.js'
import { ValidationError } from './errors.js'

export const integerMessage = (minimum: bigint | number, maximum: bigint | number) =>
  `must be an integer from ${minimum} to ${maximum}`
export const INT64_MESSAGE = integerMessage(INT64_MIN, INT64_MAX)

/** A validation failure as the client reads it: where (`body/name`), then what is wrong. */
export const validationMessage = (part: string, path: string, message: string) => `${part}${path} ${message}`

// What a `pattern` means, in words: a client is not shown a regular expression to decode.
const PATTERN_RULES: Record<string, string> = { [STORABLE_TEXT_PATTERN]: STORABLE_TEXT_RULE }

/** Ajv's message, with a pattern said in words. */
function describe ({ keyword, params, message }: FastifySchemaValidationError): string {
  // Ajv's own words ("must NOT have additional properties") do not say which one.
  if (keyword === 'additionalProperties') return `has an unknown property ${JSON.stringify(params.additionalProperty)}`
  if (keyword !== 'pattern') return message as string // Ajv words every other keyword itself
  /* c8 ignore next -- every pattern of ours has its words above; a new one without still shows no regex */
  return PATTERN_RULES[String(params.pattern)] ?? 'contains characters that are not allowed'
}

// Decimal digits only, in a query or a path: "1e2", "0x10" and " 5" are not integers there.
const DECIMAL_INTEGER = /^-?\d{1,20}$/

function toInteger (value: unknown, acceptText: boolean): bigint | undefined {
  if (typeof value === 'bigint') return value
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value)
  if (typeof value === 'string' && acceptText && DECIMAL_INTEGER.test(value)) return BigInt(value)
  return undefined
}

type CompiledKeyword = ReturnType<NonNullable<FuncKeywordDefinition['compile']>>

interface IntegerRule {
  minimum: string
  maximum: string
  /** Held as a BigInt (int64), or as a number. */
  bigint: boolean
}

/**
 * Ajv's `integer` rejects BigInt, a double cannot hold every int64, and its coercion of text reads
 * "1e2" as 100: so every `integer` node is checked by this keyword instead. It accepts an exact
 * integer within the node's bounds and stores it as a BigInt (int64) or a number.
 */
function integerKeyword (acceptText: boolean): FuncKeywordDefinition {
  return {
    keyword: 'integer',
    modifying: true,
    schemaType: 'object',
    compile (rule: IntegerRule) {
      const minimum = BigInt(rule.minimum)
      const maximum = BigInt(rule.maximum)
      const errors = [{ keyword: 'integer', message: integerMessage(minimum, maximum), params: {} }]
      const validate: CompiledKeyword = (data, context) => {
        const value = toInteger(data, acceptText)
        if (value === undefined || value < minimum || value > maximum) {
          validate.errors = errors
          return false
        }
        context!.parentData[context!.parentDataProperty] = rule.bigint ? value : Number(value)
        return true
      }
      return validate
    }
  }
}

/** A copy of a schema for Ajv, with every `integer` node (and its bounds) handed to the integer keyword. */
export function forAjv (schema: unknown): AnySchema {
  return JSON.parse(JSON.stringify(schema), (_key, node) => {
    if (node?.type !== 'integer') return node
    const { type, format, minimum, maximum, ...rest } = node
    const bigint = format === 'int64'
    // Without bounds of its own, an integer is bounded by what it is held in.
    const [lowest, highest] = bigint ? [INT64_MIN, INT64_MAX] : [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]
    const integer: IntegerRule = { minimum: String(minimum ?? lowest), maximum: String(maximum ?? highest), bigint }
    return { ...rest, integer }
  })
}

function createAjv (options: Options, acceptText: boolean, schemas: unknown[]): Ajv {
  // int32 (the Error schema's) is the one format our schemas name outside int64: no ajv-formats needed.
  // Our schemas are fixed: test/schemas-meta.test.ts checks them against the meta-schema once,
  // which at every start-up cost ~80 ms (Ajv compiles the meta-schema first).
  // No removeAdditional (Fastify's default removes them): a key that `additionalProperties: false`
  // forbids is refused, not silently dropped with the request acted on as if it were not there.
  const ajv = new Ajv({
    useDefaults: true, allErrors: false, formats: { int32: true }, validateSchema: false, ...options
  })
  ajv.addKeyword(integerKeyword(acceptText))
  for (const schema of schemas) ajv.addSchema(forAjv(schema))
  return ajv
}

type Compile = (body: boolean, schema: unknown) => ReturnType<Ajv['compile']>

// One set of compiled validators a process for each text length: an app built again (a host's
// tests build one per test) reuses them instead of compiling every route's schemas anew with Ajv,
// most of such an app's build. A validator holds no state between calls.
const validators = new Map<number, Compile>()

/** Compiles a request part's schema, once for all apps with this `maxTextLength` (whose shared schemas are `schemas`). */
function validatorsFor (maxTextLength: number, schemas: unknown[]): Compile {
  let compile = validators.get(maxTextLength)
  if (compile === undefined) {
    const bodyAjv = createAjv({ coerceTypes: false }, false, schemas)
    const textAjv = createAjv({ coerceTypes: 'array' }, true, schemas)
    const compiled = new Map<string, ReturnType<Ajv['compile']>>()
    compile = (body, schema) => {
      const copy = forAjv(schema)
      const key = `${body}${JSON.stringify(copy)}`
      let validate = compiled.get(key)
      if (validate === undefined) compiled.set(key, validate = (body ? bodyAjv : textAjv).compile(copy))
      return validate
    }
    validators.set(maxTextLength, compile)
  }
  return compile
}

export interface ValidationOptions {
  /** The longest name or tag accepted, in characters. */
  maxTextLength: number
}

/**
 * Adds the shared schemas to the registering scope (for its serializers and the OpenAPI document)
 * and validates requests against them. Request bodies are checked without any type coercion ("5"
 * is not an id, 7 is not a name), while path parameters and query strings, which are always text,
 * are coerced. Scoped to the plugin that registers it, so a host app keeps its own validation.
 */
export default fp<ValidationOptions>(async function strictValidation (fastify, { maxTextLength }) {
  const schemas = sharedSchemas(maxTextLength)
  for (const schema of schemas) fastify.addSchema(schema)
  const compile = validatorsFor(maxTextLength, schemas)
  fastify.setValidatorCompiler(({ schema, httpPart }) => compile(httpPart === 'body', schema))
  // Fastify's own messages ("body/id must be …"), without the stack trace its formatter captures.
  fastify.setSchemaErrorFormatter((errors, part) =>
    new ValidationError(errors.map((error) => validationMessage(part, error.instancePath, describe(error))).join(', ')))
}, { name: 'plant-store-validation' })
