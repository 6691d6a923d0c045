import { createHmac, randomFillSync } from 'node:crypto'

// Random bytes drawn 4 KiB at a time, written out as hex at once: a message id is then a slice of
// that text (~40 ns; a Buffer.toString of its own 16 bytes each took ~300 ns).
const ID_HEX = 32
const pool = Buffer.alloc(256 * ID_HEX / 2)
let hex = ''
let taken = 0

/**
 * A Standard Webhooks message id: one per event, kept across retries and endpoints; never a '.'.
 * 128 random bits, in hex.
 */
export function messageId (): string {
  if (taken === hex.length) {
    randomFillSync(pool)
    hex = pool.toString('hex')
    taken = 0
  }
  taken += ID_HEX
  return `msg_${hex.slice(taken - ID_HEX, taken)}`
}

/**
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each key, space-separated (a rotation signs
 * with all). `body` as text or as the bytes sent (UTF-8).
 */
export function sign (keys: readonly Buffer[], id: string, timestamp: number, body: string | Buffer): string {
  const prefix = `${id}.${timestamp}.`
  let signature = ''
  for (const key of keys) {
    signature += `${signature === '' ? '' : ' '}v1,${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`
  }
  return signature
}

/**
 * The headers of one attempt: the timestamp is this attempt's, in Unix seconds; with `cursor`, the
 * event's place in the change feed (webhook-cursor: GET /plants/changes?after=<it> goes on after it).
 */
export function webhookHeaders (keys: readonly Buffer[], id: string, body: string | Buffer, now = Date.now(), cursor?: string): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(keys, id, timestamp, body),
    ...(cursor !== undefined && { 'webhook-cursor': cursor })
  }
}
