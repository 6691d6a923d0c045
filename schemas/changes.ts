import { Type, type Static } from 'typebox'
import { WEBHOOK_EVENT_TYPES } from './protocol.js'
import { webhookEventSchemas } from './webhook-events.js'

/** The most changes one answer holds (`limit`'s maximum), and how many without a limit. */
export const MAX_CHANGES = 1000
export const DEFAULT_CHANGES = 100
/** The longest long-poll, in seconds (`wait`'s maximum). */
export const MAX_WAIT_SECONDS = 30

/** A cursor's text: base64url, at most this long (`now` too, as `after`). */
export const MAX_CURSOR_LENGTH = 200
const CURSOR_PATTERN = '^[A-Za-z0-9_-]+$'

const escaped = WEBHOOK_EVENT_TYPES.map((type) => type.replace(/\./g, '\\.'))
/** A comma list of event types, each one of WEBHOOK_EVENT_TYPES. */
const TYPES_PATTERN = `^(${escaped.join('|')})(,(${escaped.join('|')}))*$`

export const ChangesQuerySchema = Type.Object({
  after: Type.Optional(Type.String({
    minLength: 1,
    maxLength: MAX_CURSOR_LENGTH,
    pattern: CURSOR_PATTERN,
    description: 'Changes after this cursor (a `cursor` or `next` given before, as it was given); `now`: none, and the head\'s cursor as `next`; ' +
      'none: from the oldest change kept'
  })),
  limit: Type.Optional(Type.Integer({
    format: 'int32', minimum: 1, maximum: MAX_CHANGES, default: DEFAULT_CHANGES, description: 'The most changes in the answer, in decimal digits'
  })),
  types: Type.Optional(Type.String({
    pattern: TYPES_PATTERN,
    maxLength: 200,
    description: `Only changes of these event types, a comma list of ${WEBHOOK_EVENT_TYPES.join(', ')} (default: all)`,
    examples: [WEBHOOK_EVENT_TYPES.join(',')]
  })),
  wait: Type.Optional(Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
    default: 0,
    description: 'With no change to answer, wait up to this many seconds for one (a long-poll): the answer comes as soon as one commits'
  }))
})

export type ChangesQuery = Static<typeof ChangesQuerySchema>
/** A query as the route has it once validated: its defaults filled in. */
export type ChangesRequest = ChangesQuery & Required<Pick<ChangesQuery, 'limit' | 'wait'>>

const Cursor = (description: string) => Type.String({ description, pattern: CURSOR_PATTERN, maxLength: MAX_CURSOR_LENGTH, examples: ['ZmVlZC5leGFtcGxlLjAuNDI'] })

/** One answer of GET /plants/changes: the changes, and the cursor to ask after next. */
export function changesSchemas (maxTextLength?: number) {
  const { PlantCreatedEvent, PlantDeletedEvent, PlantUpdatedEvent } = webhookEventSchemas(maxTextLength)
  const Change = Type.Object({
    cursor: Cursor('This change\'s place in the feed: opaque text, passed back as it is (`after`, or Last-Event-ID)'),
    event: Type.Union([PlantCreatedEvent, PlantUpdatedEvent, PlantDeletedEvent], { description: 'The event, as the webhook body of its type carries it' })
  })
  const ChangesPage = Type.Object({
    changes: Type.Array(Change, { maxItems: MAX_CHANGES, description: 'The changes after the cursor, in feed order: every committed create, update and delete once' }),
    next: Cursor('Where to go on from: past every change answered and every change the type filter skipped; always present')
  }, { $id: 'plant-store.ChangesPage', title: 'ChangesPage', description: 'A page of the change feed' })
  return { Change, ChangesPage }
}
