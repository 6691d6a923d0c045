/** One key's window: how many hits it counted, and when it ends (ms since the epoch). */
export interface Window {
  count: number
  resetAt: number
}

// Keys kept at most: a flood of new keys (addresses, identities) evicts the oldest windows
// instead of growing the process without bound (~100 bytes a key).
const DEFAULT_CAPACITY = 10_000

/**
 * Fixed-window counters by key, for the per-identity rate limit and the failed-authentication
 * limit: a key's first hit opens a window of `timeWindow` ms, and its hits count until it ends.
 */
export class WindowCounter {
  readonly #windows = new Map<string, Window>()
  readonly #timeWindow: number
  readonly #capacity: number

  constructor (timeWindow: number, capacity = DEFAULT_CAPACITY) {
    this.#timeWindow = timeWindow
    this.#capacity = capacity
  }

  /** The key's open window, if it has one. */
  peek (key: string, now = Date.now()): Window | undefined {
    const window = this.#windows.get(key)
    return window !== undefined && window.resetAt > now ? window : undefined
  }

  /** Counts one hit for the key, opening a window if it has none; returns the window. */
  hit (key: string, now = Date.now()): Window {
    let window = this.peek(key, now)
    if (window === undefined) {
      // Re-inserted, so that the Map's first key is always the oldest window.
      this.#windows.delete(key)
      if (this.#windows.size >= this.#capacity) this.#windows.delete(this.#windows.keys().next().value!)
      window = { count: 0, resetAt: now + this.#timeWindow }
      this.#windows.set(key, window)
    }
    window.count++
    return window
  }
}

/** Whole seconds until the window ends, at least 1: what Retry-After and X-RateLimit-Reset say. */
export const secondsLeft = (window: Window, now = Date.now()) => Math.max(1, Math.ceil((window.resetAt - now) / 1000))

/**
 * The key of a client address: an IPv4 address as it is, an IPv6 address by its /64 network (one
 * host usually holds a whole /64, and would otherwise get 2^64 budgets).
 */
export function addressKey (ip: string): string {
  if (!ip.includes(':') || ip.includes('.')) return ip.replace(/^::ffff:/i, '')
  const [head, tail = ''] = ip.split('::')
  const groups = head === '' ? [] : head.split(':')
  // A '::' stands for as many zero groups as the address lacks.
  if (ip.includes('::')) groups.push(...Array(8 - groups.length - (tail === '' ? 0 : tail.split(':').length)).fill('0'), ...(tail === '' ? [] : tail.split(':')))
  return `${groups.slice(0, 4).map((group) => group.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`
}
