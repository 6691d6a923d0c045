import { DEFAULT_MAX_TEXT_LENGTH, webhookEventSchemas } from '../../schemas/index.js'
import { DEFAULT_RETRY_SCHEDULE, DEFAULT_WEBHOOK_TIMEOUT } from '../../plugins/webhooks/settings.js'

// The OpenAPI `webhooks` object: the requests the service makes to the endpoints its operator
// configured, described for whoever writes a receiver.

/** The webhook key of plant.created: the public Plant Store document's own, kept for its readers. */
export const PLANT_CREATED_WEBHOOK = '/plant/webhook'
export const PLANT_DELETED_WEBHOOK = '/plant/deleted'
export const PLANT_UPDATED_WEBHOOK = '/plant/updated'

const SIGNATURE = '[A-Za-z0-9+/]{43}=' // the base64 of a 32-byte HMAC-SHA256

/** A header parameter, typed without `?: undefined` members, so that strict hosts' OpenAPI types take it. */
interface HeaderParameter {
  name: string
  in: 'header'
  required: true
  description: string
  schema: { type: 'string', pattern: string, maxLength?: number } | { type: 'integer', format: 'int64', minimum: number, maximum: number }
  example: string | number
}

const headers: HeaderParameter[] = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event\'s id: the same on every attempt and every endpoint, and on a redelivery by hand. ' +
      'Delivery is at least once: process each id once and answer 2xx to a repeat',
    schema: { type: 'string', pattern: '^msg_[A-Za-z0-9_-]+$', maxLength: 64 },
    example: 'msg_p5jXN8AQM9LWM0D4loKWxJ'
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'When this attempt was sent, in Unix seconds (a retry carries a newer one). Signed: refuse a ' +
      'request whose timestamp is more than about 5 minutes from your clock, so that a recorded request cannot be replayed',
    schema: { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    example: 1795479600
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description: '`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` (the body as ' +
      'received, byte for byte), keyed with the bytes of the endpoint\'s secret (`whsec_` + base64: the key is the ' +
      'base64-decoded part). While the operator rotates secrets, every listed secret signs: several signatures, ' +
      'space-separated; accept the request when one of them matches a secret you hold',
    schema: { type: 'string', pattern: `^v1,${SIGNATURE}( v1,${SIGNATURE})*$` },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='
  },
  {
    name: 'webhook-cursor',
    in: 'header',
    required: true,
    description: 'This event\'s place in the change feed (the `cursor` GET /plants/changes gives it): a receiver that was ' +
      'down resumes with GET /plants/changes?after=<the last webhook-cursor it handled>. Not signed: treat it as a hint',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$', maxLength: 200 },
    example: 'ZmVlZC5leGFtcGxlLjAuNDI'
  }
]

const seconds = (ms: number) => `${ms / 1000} s`

/** What every event's receiver needs to know, besides its body. */
const DELIVERY = [
  'Sent as [Standard Webhooks](https://www.standardwebhooks.com) 1.0 to every endpoint the service\'s operator ' +
    'configured for this event (there is no registration API): `POST` to the endpoint\'s URL, `application/json`.',
  '**Verify before trusting.** Check the signature with any Standard Webhooks library (`standardwebhooks`, `svix`) ' +
    'and the endpoint\'s `whsec_` secret, over the raw body as received, and refuse timestamps older (or newer) than ' +
    'about 5 minutes. Parse the body keeping ids exact: an int64 id past 2^53 loses digits in a plain `JSON.parse` ' +
    '(in `standardwebhooks`, verify with `{ jsonParse: false }`).',
  '**At least once, in no promised order.** An event can arrive more than once (deduplicate on `webhook-id`), and ' +
    'events can arrive in another order than they happened (order them by `timestamp` if you must). The body is the ' +
    'same bytes on every attempt.',
  '**Retries.** Any status other than 2xx and 410, a redirect (never followed), a network error or no answer ' +
    `within the attempt's timeout (${seconds(DEFAULT_WEBHOOK_TIMEOUT)} by default) fails the attempt. The next ` +
    `one follows the operator's schedule, by default after ${DEFAULT_RETRY_SCHEDULE.split(',').join(', ')}, each wait ` +
    'jittered by ±20 %. After 429, 502, 503, 504 or a timeout the wait is at least 60 s, longer when `Retry-After` ' +
    'asks for it. After the last attempt the event is kept as failed, and its operator can send it again (same `webhook-id`).',
  '**410 Gone** disables the endpoint at once: nothing more is sent to it until its operator enables it again.'
].join('\n\n')

const responses = {
  200: { description: 'Received: any 2xx status counts as delivered (the body of the answer is ignored)' },
  410: { description: 'Gone: the endpoint is disabled at once, and no event is sent to it until its operator enables it again' },
  default: {
    description: 'Any other status (redirects too): the attempt failed and is retried on the schedule; after 429, 502, 503 ' +
      'and 504, at least 60 s later, or after `Retry-After` when it asks for longer'
  }
}

const webhook = (operationId: string, summary: string, lead: string, schema: object, body: string) => ({
  post: {
    operationId,
    summary,
    description: `${lead}\n\n${DELIVERY}`,
    parameters: headers,
    requestBody: { required: true, description: body, content: { 'application/json': { schema } } },
    responses,
    // No security scheme: the receiver checks the webhook-signature header, which no scheme of
    // OpenAPI describes (as an API key it would put a useless box in Swagger UI's Authorize).
    security: []
  }
})

/**
 * The OpenAPI 3.1 `webhooks` of the plant events, for names and tags of at most `maxTextLength`
 * characters: self-contained (no `$ref`), so that a host puts them in its document as they are.
 */
export function openapiWebhooks (maxTextLength = DEFAULT_MAX_TEXT_LENGTH) {
  const { PlantCreatedEvent, PlantDeletedEvent, PlantUpdatedEvent } = webhookEventSchemas(maxTextLength)
  return {
    [PLANT_CREATED_WEBHOOK]: webhook('plantCreated', 'A plant was created (plant.created)',
      'Sent after a new plant is stored (the create was acknowledged with 200). Endpoints receive it unless their ' +
      'operator chose other events.', PlantCreatedEvent, 'Information about a new plant added to the store: the ' +
      'event\'s `type` and `timestamp`, and the plant as stored, so that the body is also a valid NewPlant'),
    [PLANT_DELETED_WEBHOOK]: webhook('plantDeleted', 'A plant was deleted (plant.deleted)',
      'Sent after a plant is deleted, to the endpoints whose operator chose this event (it is off by default). The id ' +
      'may be created again afterwards, and the events may reach you in another order: compare their `timestamp`s.',
      PlantDeletedEvent,
      'The deleted plant\'s id, with the event\'s `type` and `timestamp`'),
    [PLANT_UPDATED_WEBHOOK]: webhook('plantUpdated', 'A plant was updated (plant.updated)',
      'Sent after a PUT changed a plant (the update was acknowledged with 200), to the endpoints whose operator chose this ' +
      'event (it is off by default). Events may reach you in another order: compare their `timestamp`s.',
      PlantUpdatedEvent,
      'The plant as the update stored it, with its id and the event\'s `type` and `timestamp`')
  }
}
