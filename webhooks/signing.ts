import { createHmac, randomUUID } from 'node:crypto'

/**
 * A Standard Webhooks message id: one per event, kept across retries and endpoints; never a '.'.
 * 122 random bits; randomUUID draws from a cached pool (randomBytes(16) cost ~2 % of a create).
 */
export function messageId (): string {
  return `msg_${randomUUID().replaceAll('-', '')}`
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

/** The headers of one attempt: the timestamp is this attempt's, in Unix seconds. */
export function webhookHeaders (keys: readonly Buffer[], id: string, body: string | Buffer, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(keys, id, timestamp, body)
  }
}
