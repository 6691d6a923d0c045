import type { Test } from 'tap'
import { answers, client, closesSoon, type Client } from './exchange.js'

/** The assertions' messages: of the connection that makes room, and of the one that stays. */
export interface RoomSays { evicted: string, kept: string }

const LAST_HEALTH_CHECK = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'

/**
 * A newcomer connects at the connection limit: asserts that `evicted` is closed to make room, that
 * the newcomer's request is answered 200, and that `kept` stays: a request on it is answered too
 * (making room closes one connection, at once, as the newcomer is accepted).
 */
export async function assertNewcomerMakesRoom (t: Test, port: number, evicted: Client, kept: Client, says: RoomSays) {
  const newcomer = await client(port)
  t.ok(await closesSoon(evicted), says.evicted)
  newcomer.socket.write(LAST_HEALTH_CHECK)
  await newcomer.closed
  t.same(answers(newcomer.received()), [200], 'the newcomer is answered')
  const before = answers(kept.received()).length
  kept.socket.write(LAST_HEALTH_CHECK)
  await kept.closed
  t.same(answers(kept.received()).slice(before), [200], says.kept)
}
