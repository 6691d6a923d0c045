import type { Clock } from '../../plugins/http/clock.js'

interface Timer { at: number, order: number, fn: () => void }

/**
 * The one fake clock of the fast tiers: an injected Clock (plugins/http/clock.ts) whose time moves
 * only when the test moves it. `advance(ms)` fires, in time order, every timer due by then,
 * including those the fired ones schedule; `runAll()` fires what is pending now, whatever its delay.
 */
export function fakeClock (start = Date.parse('2030-01-01T00:00:00.000Z')) {
  let time = start
  let order = 0
  const timers = new Set<Timer>()
  const due = () => [...timers].sort((a, b) => a.at - b.at || a.order - b.order)[0]
  const clock: Clock & {
    advance: (ms: number) => Promise<void>
    runAll: () => void
    pending: () => number
    set: (at: number) => void
  } = {
    now: () => time,
    schedule (fn, ms) {
      const timer: Timer = { at: time + Math.max(0, ms), order: order++, fn }
      timers.add(timer)
      return () => { timers.delete(timer) }
    },
    /** Moves the time on by `ms`, firing each timer at its own instant; promises settle between timers. */
    async advance (ms) {
      const end = time + ms
      for (let next = due(); next !== undefined && next.at <= end; next = due()) {
        timers.delete(next)
        time = Math.max(time, next.at)
        next.fn()
        // What the timer started (a write, a claim) runs before the next one fires.
        await new Promise((resolve) => setImmediate(resolve))
      }
      time = end
    },
    /** Fires the timers pending now, once each, without moving the time. */
    runAll () {
      const now = [...timers]
      timers.clear()
      for (const timer of now) timer.fn()
    },
    pending: () => timers.size,
    /** Sets the time (never backwards), firing nothing. */
    set (at) { time = Math.max(time, at) }
  }
  return clock
}
