import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { listen, newBell, ring } from '../../plugins/webhooks/thread/doorbell.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { eventually } from '../helpers/webhooks.js'

// The delivery thread's side and the API thread's side of the bell, here in one thread: the same
// atomics. The gap after a wake-up runs on a fake clock; a wait on the bell is a real one.
const GAP_MS = 50
// Long enough for a wait on the bell that was notified to settle: a turn or two of the event loop.
const SETTLE_MS = 20

t.test('a ring while the listener waits is heard at once; rings in a row are heard once', async (t) => {
  const bell = newBell()
  const clock = fakeClock()
  let heard = 0
  const listener = listen(bell, () => heard++, GAP_MS, clock)
  t.teardown(() => listener.stop())
  await sleep(SETTLE_MS)
  t.equal(heard, 0, 'no ring, nothing heard')
  ring(bell)
  ring(bell)
  ring(bell)
  t.ok(await eventually(() => heard === 1, 5000), 'heard, with the clock standing still')
  await clock.advance(2 * GAP_MS)
  t.equal(heard, 1, 'three rings in a row: one wake-up, the gap over and nothing new')
})

t.test('rings during the gap after a wake-up are heard together once it ends, not before', async (t) => {
  const bell = newBell()
  const clock = fakeClock()
  const at: number[] = []
  const listener = listen(bell, () => at.push(clock.now()), GAP_MS, clock)
  t.teardown(() => listener.stop())
  ring(bell)
  t.ok(await eventually(() => at.length === 1, 5000))
  for (let i = 0; i < 5; i++) ring(bell)
  await sleep(SETTLE_MS)
  t.equal(at.length, 1, 'within the gap: not heard yet')
  await clock.advance(GAP_MS - 1)
  t.equal(at.length, 1, 'a millisecond before the gap ends: not yet')
  await clock.advance(1)
  t.equal(at.length, 2, 'heard as the gap ends')
  t.equal(at[1] - at[0], GAP_MS, 'exactly the gap after the first wake-up')
  await clock.advance(2 * GAP_MS)
  t.equal(at.length, 2, 'the rings of the gap: one wake-up')
})

t.test('a stopped listener hears nothing more, whether it waited or was in its gap', async (t) => {
  for (const inGap of [false, true]) {
    const bell = newBell()
    const clock = fakeClock()
    let heard = 0
    const listener = listen(bell, () => heard++, GAP_MS, clock)
    if (inGap) {
      ring(bell)
      t.ok(await eventually(() => heard === 1, 5000))
      t.equal(clock.pending(), 1, 'its gap under way')
    }
    listener.stop()
    t.equal(clock.pending(), 0, 'no gap left to run')
    ring(bell)
    await sleep(SETTLE_MS)
    await clock.advance(2 * GAP_MS)
    t.equal(heard, inGap ? 1 : 0, inGap ? 'stopped in its gap' : 'stopped while waiting')
  }
})
