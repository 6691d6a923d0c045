/** Whether a promise settles (either way) within `ms` milliseconds; the timer does not outlive the answer. */
export async function settlesWithin (promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms) })
  try {
    return await Promise.race([promise.then(() => true, () => true), late])
  } finally {
    clearTimeout(timer)
  }
}

/** The median of `values` (the upper one of an even count); NaN for none. */
export function median (values: number[]): number {
  return values.toSorted((a, b) => a - b)[values.length >> 1] ?? NaN
}

/**
 * A clock the test moves by hand, for code that takes a `schedule(fn, ms)` (returning a cancel):
 * each pending timer fires when the test says so, whatever its delay.
 */
export function manualClock () {
  const pending = new Set<() => void>()
  return {
    schedule: (fn: () => void) => {
      const timer = () => { pending.delete(timer); fn() }
      pending.add(timer)
      return () => { pending.delete(timer) }
    },
    /** Fires the timers pending now: one interval passes. */
    tick: () => { for (const timer of [...pending]) timer() },
    pending: () => pending.size
  }
}
