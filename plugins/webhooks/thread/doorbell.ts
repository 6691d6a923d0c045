/**
 * How a commit that wrote events wakes the delivery thread, for next to nothing on the thread that
 * serves HTTP: two integers in shared memory, no message. The API thread counts each such commit
 * (an atomic add); the delivery thread, when it is waiting for one, says so, and only then is it
 * notified. While delivery is busy (under load) the API thread never notifies: the delivery thread
 * looks at the count again `gapMs` after each wake-up, so that the commits of that time are claimed
 * together, in one claim.
 */

import type { Clock } from '../../http/clock.js'

// [COMMITS] commits that wrote events, counted from 0 (wrapping is harmless: only a change counts);
// [WAITING] 1 while the delivery thread waits for the count to change.
const COMMITS = 0
const WAITING = 1

/** Atomics.waitAsync (ES2024; Node 16 and later), which this project's TypeScript lib does not declare. */
type WaitAsync = (bell: Int32Array, index: number, value: number) => { async: false, value: string } | { async: true, value: Promise<string> }
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync

/** The memory a bell lives in: made by the API side, handed to the delivery thread in its workerData. */
export const newBell = (): Int32Array => new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT))

/** The API side: after each commit that wrote events. A notification only when the delivery thread waits. */
export function ring (bell: Int32Array): void {
  Atomics.add(bell, COMMITS, 1)
  if (Atomics.exchange(bell, WAITING, 0) === 1) Atomics.notify(bell, COMMITS)
}

/**
 * The delivery side: calls `rung` once the count has changed, then waits `gapMs` on `clock` before
 * it looks again. Resolves nothing; `stop` ends the listening.
 */
export function listen (bell: Int32Array, rung: () => void, gapMs: number, clock: Clock): { stop: () => void } {
  let seen = Atomics.load(bell, COMMITS)
  let stopped = false
  let cancelGap = () => {}
  const heard = () => {
    if (stopped) return
    Atomics.store(bell, WAITING, 0)
    seen = Atomics.load(bell, COMMITS)
    rung()
    cancelGap = clock.schedule(wait, gapMs)
  }
  function wait () {
    // Said first, read after: a commit in between is seen by the comparison, not lost.
    Atomics.store(bell, WAITING, 1)
    const waiting = waitAsync(bell, COMMITS, seen)
    if (waiting.async) waiting.value.then(heard)
    else heard()
  }
  wait()
  return {
    stop () {
      stopped = true
      cancelGap()
      // The wait pending ends now, and finds nothing to do.
      Atomics.notify(bell, COMMITS)
    }
  }
}
