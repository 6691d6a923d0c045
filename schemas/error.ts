import { Type, type Static } from 'typebox'

export const ErrorSchema = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code' }),
  message: Type.String({ description: 'What went wrong, for a human reader' })
}, { $id: 'Error', description: 'Every failure has this shape' })

export type ErrorBody = Static<typeof ErrorSchema>
