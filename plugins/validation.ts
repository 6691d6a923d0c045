import { Ajv, type AnySchema, type FuncKeywordDefinition, type Options, type SchemaValidateFunction } from 'ajv'
import fp from 'fastify-plugin'
import { INT64_MAX, INT64_MIN, sharedSchemas } from '../schemas/index.js'
import { ValidationError } from './http-errors.js'

const INT64_MESSAGE = `must be an integer from ${INT64_MIN} to ${INT64_MAX}`
const DECIMAL_INTEGER = /^-?\d{1,20}$/

function toInt64 (value: unknown, acceptStrings: boolean): bigint | undefined {
  let result: bigint
  if (typeof value === 'bigint') result = value
  else if (typeof value === 'number' && Number.isSafeInteger(value)) result = BigInt(value)
  else if (typeof value === 'string' && acceptStrings && DECIMAL_INTEGER.test(value)) result = BigInt(value)
  else return undefined
  return result >= INT64_MIN && result <= INT64_MAX ? result : undefined
}

/**
 * Ajv's `integer` rejects BigInt and a double cannot hold every int64, so `format: int64` nodes are
 * checked by this keyword instead: it accepts an exact integer in range and stores it as a BigInt.
 */
function int64Keyword (acceptStrings: boolean): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (_schema, data, _parentSchema, ctx) => {
    const value = toInt64(data, acceptStrings)
    if (value === undefined) {
      validate.errors = [{ keyword: 'int64', message: INT64_MESSAGE, params: {} }]
      return false
    }
    ctx!.parentData[ctx!.parentDataProperty] = value
    return true
  }
  return { keyword: 'int64', modifying: true, schemaType: 'boolean', validate }
}

/** A copy of a schema for Ajv, with every `integer`/`int64` node handed to the int64 keyword. */
export function forAjv (schema: unknown): AnySchema {
  return JSON.parse(JSON.stringify(schema), (_key, node) => {
    if (node?.type === 'integer' && node.format === 'int64') {
      const { type, format, ...rest } = node
      return { ...rest, int64: true }
    }
    return node
  })
}

function createAjv (options: Options, acceptStringInt64: boolean): Ajv {
  // int32 (the Error schema's) is the one format our schemas name outside int64: no ajv-formats needed.
  const ajv = new Ajv({ useDefaults: true, removeAdditional: true, allErrors: false, formats: { int32: true }, ...options })
  ajv.addKeyword(int64Keyword(acceptStringInt64))
  for (const schema of sharedSchemas) ajv.addSchema(forAjv(schema))
  return ajv
}

/**
 * Request bodies are checked without any type coercion ("5" is not an id, 7 is not a name), while
 * path parameters and query strings, which are always text, are coerced. Scoped to the plugin
 * that registers it, so a host app keeps its own validation.
 */
export default fp(async function strictValidation (fastify) {
  const bodyAjv = createAjv({ coerceTypes: false }, false)
  const textAjv = createAjv({ coerceTypes: 'array' }, true)
  fastify.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(forAjv(schema)))
  // Fastify's own messages ("body/id must be …"), without the stack trace its formatter captures.
  fastify.setSchemaErrorFormatter((errors, part) =>
    new ValidationError(errors.map((error) => `${part}${error.instancePath} ${error.message}`).join(', ')))
}, { name: 'plant-store-validation' })
