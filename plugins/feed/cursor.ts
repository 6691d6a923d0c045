import { INT64_MAX } from '../../schemas/protocol.js'
import type { FeedPosition } from '../store/outbox.js'

// A cursor is opaque text: base64url of the feed's identity and the position (xid, seq) in decimal.
const BASE64URL = /^[A-Za-z0-9_-]{1,200}$/
const XID8_MAX = 2n ** 64n - 1n
const DECODED = /^([0-9a-f-]{36})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})$/

/** The cursor of `position` in the feed `id`. */
export const encodeCursor = (id: string, { xid, seq }: FeedPosition): string => Buffer.from(`${id}.${xid}.${seq}`).toString('base64url')

/** The feed and position a cursor names, or undefined for text that is no cursor. */
export function decodeCursor (cursor: string): { id: string, position: FeedPosition } | undefined {
  if (!BASE64URL.test(cursor)) return undefined
  const parts = DECODED.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (parts === null) return undefined
  const position = { xid: BigInt(parts[2]), seq: BigInt(parts[3]) }
  // Past a seq's int8 and a transaction id's xid8 no store holds it (its cast would fail, a 500): no cursor, as malformed text is.
  return position.xid > XID8_MAX || position.seq > INT64_MAX ? undefined : { id: parts[1], position }
}
