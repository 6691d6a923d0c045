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
