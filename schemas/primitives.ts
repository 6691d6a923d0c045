import { Type, type Static, type TSchema } from 'typebox'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/**
 * A signed 64-bit integer, held as a BigInt in code so that no id is ever rounded through a
 * double. The JSON Schema keeps `type: integer, format: int64` for the OpenAPI document; the
 * validator checks these nodes with its own `int64` keyword (plugins/validation.ts).
 */
export const Int64 = (description: string, example = 1) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description, examples: [example] })

/**
 * Text that every store keeps exactly as sent: PostgreSQL refuses U+0000 and both SQLite and
 * PostgreSQL replace an unpaired surrogate with U+FFFD, so both are refused up front.
 */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$'

export const StorableText = (description: string, example: string) =>
  Type.String({ pattern: STORABLE_TEXT_PATTERN, description, examples: [example] })

/** A `$ref` to a shared schema that keeps its static type, so routes get typed requests and replies. */
export const ref = <T extends TSchema>(schema: T, description?: string) =>
  Type.Unsafe<Static<T>>({ $ref: `${(schema as { $id?: string }).$id}#`, ...(description && { description }) })
