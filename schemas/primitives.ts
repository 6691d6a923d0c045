import { Type, type Static, type TSchema } from 'typebox'

export { INT64_MAX, INT64_MIN } from './protocol.js'

/** The longest delay a Node timer holds, in ms (~24.8 days): a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The `$id`s of the shared schemas carry this prefix, so that they never collide with a host app's
 * own schemas (its `Error`, `Plant`...); the standalone service's document drops it again.
 */
export const SCHEMA_ID_PREFIX = 'plant-store.'

/**
 * A signed 64-bit integer, held as a BigInt in code so that no id is ever rounded through a
 * double. The JSON Schema keeps `type: integer, format: int64` for the OpenAPI document; the
 * validator checks these nodes with its own `integer` keyword (plugins/http/validation.ts).
 */
export const Int64 = (description: string, example?: number) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description, ...(example !== undefined && { examples: [example] }) })

/**
 * Text that every store keeps exactly as sent: PostgreSQL refuses U+0000 and both SQLite and
 * PostgreSQL replace an unpaired surrogate with U+FFFD, so both are refused up front. A surrogate
 * pair is spelled out, so that the pattern means the same with the regex `u` flag and without it
 * (Postman, tv4 and other engines without it would see an emoji as two unpaired surrogates).
 */
export const STORABLE_TEXT_PATTERN = '^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$'
/** What STORABLE_TEXT_PATTERN means, in the words a client gets when a value breaks it. */
export const STORABLE_TEXT_RULE = 'must not contain U+0000 or an unpaired surrogate code unit'

/** The longest name or tag accepted by default, in characters: far above any real plant name. */
export const DEFAULT_MAX_TEXT_LENGTH = 1000
/**
 * The largest request body that can be set, in bytes: a body is held as one string, and V8's
 * strings end at about 2^29 characters. A text can be no longer than the body that carries it.
 */
export const MAX_BODY_LIMIT = 256 * 1024 * 1024
/** The largest request body accepted by default, in bytes. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024
export const MAX_TEXT_LENGTH_LIMIT = MAX_BODY_LIMIT

export const StorableText = (description: string, example: string, maxLength: number) => Type.String({
  pattern: STORABLE_TEXT_PATTERN,
  maxLength,
  description: `${description}: at most ${maxLength} characters, and it ${STORABLE_TEXT_RULE}`,
  examples: [example]
})

/** A `$ref` to a shared schema that keeps its static type, so routes get typed requests and replies. */
export const ref = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T>>({ $ref: `${(schema as { $id?: string }).$id}#` })
