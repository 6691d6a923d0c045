/**
 * The one clock the waiting parts take (plugins/http/clock.ts), and the fake one the fast tiers move
 * by hand (test/helpers/fake-clock.ts): timers fire at their instants, in order, and never early.
 */
import t from 'tap'
import { every, systemClock } from '../../plugins/http/clock.js'
import { fakeClock } from '../helpers/fake-clock.js'

t.test('the system clock tells the real time, and its timers fire or are cancelled', async (t) => {
  const before = Date.now()
  const now = systemClock.now()
  t.ok(now >= before && now <= Date.now(), 'Date.now()')
  const fired = await new Promise<boolean>((resolve) => { systemClock.schedule(() => resolve(true), 1) })
  t.ok(fired, 'a timer fires')
  let late = false
  const cancel = systemClock.schedule(() => { late = true }, 1)
  cancel()
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.notOk(late, 'a cancelled timer does not')
})

t.test('a fake clock fires each timer at its instant, in time order, only as the test moves it', async (t) => {
  const clock = fakeClock(1000)
  const fired: Array<[string, number]> = []
  clock.schedule(() => fired.push(['b', clock.now()]), 20)
  clock.schedule(() => fired.push(['a', clock.now()]), 10)
  const cancel = clock.schedule(() => fired.push(['never', clock.now()]), 15)
  cancel()
  t.equal(clock.pending(), 2)
  await clock.advance(9)
  t.same(fired, [], 'nothing before its time')
  await clock.advance(11)
  t.same(fired, [['a', 1010], ['b', 1020]], 'each at its own instant, earliest first')
  t.equal(clock.now(), 1020)
  clock.schedule(() => fired.push(['later', clock.now()]), 60_000)
  clock.runAll()
  t.same(fired.at(-1), ['later', 1020], 'runAll fires what is pending without moving the time')
  clock.set(500)
  t.equal(clock.now(), 1020, 'never backwards')
  clock.set(2000)
  t.equal(clock.now(), 2000)
})

t.test('every runs its function at each period until cancelled, on the clock it is given', async (t) => {
  const clock = fakeClock(0)
  const at: number[] = []
  const stop = every(clock, 100, () => at.push(clock.now()))
  await clock.advance(350)
  t.same(at, [100, 200, 300])
  stop()
  await clock.advance(1000)
  t.same(at, [100, 200, 300], 'none after it is cancelled')
  t.equal(clock.pending(), 0)
})
