import type { Test } from 'tap'
import { answers, client, type Client } from './exchange.js'
import { settlesWithin } from './time.js'

/** The assertions' messages: of the connection that makes room, and of the one that stays. */
export interface RoomSays { evicted: string, kept: string }

/**
 * A newcomer connects at the connection limit: asserts that `evicted` is closed to make room (within
 * a second), that `kept` stays (for 200 ms), and that the newcomer's request is answered 200.
 */
export async function assertNewcomerMakesRoom (t: Test, port: number, evicted: Client, kept: Client, says: RoomSays) {
  const newcomer = await client(port)
  t.ok(await settlesWithin(evicted.closed, 1000), says.evicted)
  t.notOk(await settlesWithin(kept.closed, 200), says.kept)
  newcomer.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  await newcomer.closed
  t.same(answers(newcomer.received()), [200], 'the newcomer is answered')
}
