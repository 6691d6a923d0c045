/**
 * BODY_MIN_RATE on the system clock and real sockets, in real time: a body that arrives absurdly
 * slowly is cut off (408) soon after BODY_RATE_GRACE, one slow but fast enough is stored, and a
 * connection whose body came whole is no longer watched. The same decisions on a fake clock:
 * test/service/early-answer.test.ts and test/unit/connection-table.test.ts.
 */
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { listening, settingsFrom, storedPlants, TOKEN } from '../../helpers/app.js'
import { answers, exchange, requestHead } from '../../helpers/exchange.js'

const VALID = `Authorization: Bearer ${TOKEN}`
// Acting within 10 % of the grace on an idle machine; up to this much later on a loaded one,
// still long before REQUEST_TIMEOUT (30 s).
const LATE = 8000

t.test('BODY_MIN_RATE: a body slower than it, once BODY_RATE_GRACE has passed, is answered 408 and let go', async (t) => {
  const { port, store } = await listening(t, {}, settingsFrom({ BODY_MIN_RATE: '100', BODY_RATE_GRACE: '1000' }))
  // Three connections at once, each on its own: their waits overlap.
  const tooSlow = async () => {
    // A first byte of body, then one every 300 ms.
    const slow = await exchange(port, `${requestHead('POST /plants', VALID, 'Content-Type: application/json', 'Content-Length: 100000')}[`, 'a')
    t.same(answers(slow.answer), [408], 'one byte every 300 ms: 408')
    t.match(slow.answer, /\{"error":408,"message":"Request timed out"\}$/, 'in the Error shape')
    t.ok(slow.waited >= 950 && slow.waited < 1000 + LATE, `after ${slow.waited} ms, not at REQUEST_TIMEOUT`)
  }
  // 50 bytes every 100 ms (500 bytes/s): a slow body, but fast enough.
  const slowEnough = async () => {
    const body = `{"id":1,"name":"${'a'.repeat(900)}"}`
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.write(requestHead('POST /plants', VALID, 'Content-Type: application/json', 'Connection: close', `Content-Length: ${body.length}`))
    for (let sent = 0; sent < body.length; sent += 50) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      socket.write(body.slice(sent, sent + 50))
    }
    await once(socket, 'close')
    t.match(answer, /^HTTP\/1\.1 200 /, 'a body at 500 bytes/s over ~2 s is stored')
  }
  // A whole body on a connection kept open past the next checks: it is no longer watched.
  const keptOpen = async () => {
    const kept = connect(port, '127.0.0.1')
    const second = '{"id":2,"name":"kept"}'
    kept.write(requestHead('POST /plants', VALID, 'Content-Type: application/json', `Content-Length: ${second.length}`) + second)
    await once(kept, 'data')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    t.notOk(kept.destroyed, 'the keep-alive connection is still open after BODY_RATE_GRACE')
    kept.destroy()
  }
  await Promise.all([tooSlow(), slowEnough(), keptOpen()])
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n, 2n])
})
