import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { listen, newBell, ring } from '../../plugins/webhooks/thread/doorbell.js'
import { eventually } from '../helpers/webhooks.js'

// The delivery thread's side and the API thread's side of the bell, here in one thread: the same atomics.
const GAP_MS = 50

t.test('a ring while the listener waits is heard at once; rings in a row are heard once', async (t) => {
  const bell = newBell()
  let heard = 0
  const listener = listen(bell, () => heard++, GAP_MS)
  t.teardown(() => listener.stop())
  await sleep(20)
  t.equal(heard, 0, 'no ring, nothing heard')
  ring(bell)
  ring(bell)
  ring(bell)
  t.ok(await eventually(() => heard === 1, 5000), 'heard')
  await sleep(2 * GAP_MS)
  t.equal(heard, 1, 'three rings in a row: one wake-up')
})

t.test('rings during the gap after a wake-up are heard together once it ends', async (t) => {
  const bell = newBell()
  const at: number[] = []
  const listener = listen(bell, () => at.push(performance.now()), GAP_MS)
  t.teardown(() => listener.stop())
  ring(bell)
  t.ok(await eventually(() => at.length === 1, 5000))
  for (let i = 0; i < 5; i++) {
    ring(bell)
    await sleep(2)
  }
  t.ok(await eventually(() => at.length === 2, 5000), 'heard again')
  await sleep(2 * GAP_MS)
  t.equal(at.length, 2, 'the rings of the gap: one wake-up')
  t.ok(at[1] - at[0] >= GAP_MS - 5, `not before the gap ended (${Math.round(at[1] - at[0])} ms)`)
})

t.test('a stopped listener hears nothing more, whether it waited or was in its gap', async (t) => {
  for (const inGap of [false, true]) {
    const bell = newBell()
    let heard = 0
    const listener = listen(bell, () => heard++, GAP_MS)
    if (inGap) {
      ring(bell)
      t.ok(await eventually(() => heard === 1, 5000))
    }
    listener.stop()
    ring(bell)
    await sleep(2 * GAP_MS)
    t.equal(heard, inGap ? 1 : 0, inGap ? 'stopped in its gap' : 'stopped while waiting')
  }
})
