import { Type, type Static } from 'typebox'
import { SCHEMA_ID_PREFIX } from './primitives.js'

export const ErrorSchema = Type.Object({
  error: Type.Integer({ format: 'int32', minimum: 400, maximum: 599, description: 'The HTTP status code' }),
  message: Type.String({
    // One line of printable text: no control characters, so a client can log it as it is.
    pattern: '^[^\\u0000-\\u001f\\u007f]*$',
    maxLength: 1000,
    description: 'What went wrong, in one sentence for a human reader'
  })
}, { $id: `${SCHEMA_ID_PREFIX}Error`, description: 'Every failure has this shape' })

export type ErrorBody = Static<typeof ErrorSchema>
