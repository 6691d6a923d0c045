import createError from '@fastify/error'

// The feed's refusals, each message written once: the route answers them, the OpenAPI document shows them.
const AGAIN = 'list the changes again without `after` (or with `after=now`) and read /plants for the current state'

export const FeedCursorInvalidError = createError('PLANT_STORE_FEED_CURSOR_INVALID',
  `The cursor is not one this feed gives: pass a \`cursor\` or \`next\` as it was given, or ${AGAIN}`, 400, Error, false)
export const FeedCursorGoneError = createError('PLANT_STORE_FEED_CURSOR_GONE',
  `The cursor is older than the changes this feed keeps, or of another feed (a restored or another database): ${AGAIN}`, 410, Error, false)
export const FeedBusyError = createError('PLANT_STORE_FEED_BUSY',
  'Too many clients are waiting for changes, try again later', 503, Error, false)

/** How long a client refused with FeedBusyError waits, in seconds (its Retry-After). */
export const FEED_BUSY_RETRY_SECONDS = 1
