/** One key's window: how many hits it counted, and when it ends (ms since the epoch). */
export interface Window {
  count: number
  resetAt: number
}

// Keys kept at most: a flood of new keys (addresses, identities) evicts windows instead of
// growing the process without bound (~100 bytes a key).
const DEFAULT_CAPACITY = 10_000

/**
 * Fixed-window counters by key, for the per-identity rate limit and the failed-authentication
 * limit: a key's first hit opens a window of `timeWindow` ms, and its hits count until it ends.
 * A key whose count reached `limit` (its next hit is refused) is the last to be evicted: a flood
 * of other keys makes room among the keys under it, so it cannot wipe out a refusal.
 */
export class WindowCounter {
  // Each in the order its keys got there: all windows have one length, so the first ends first.
  readonly #underLimit = new Map<string, Window>()
  readonly #atLimit = new Map<string, Window>()
  readonly #timeWindow: number
  readonly #capacity: number
  readonly #limit: number

  constructor (timeWindow: number, capacity = DEFAULT_CAPACITY, limit = Infinity) {
    this.#timeWindow = timeWindow
    this.#capacity = capacity
    this.#limit = limit
  }

  /** The key's open window, if it has one. */
  peek (key: string, now = Date.now()): Window | undefined {
    const window = this.#underLimit.get(key) ?? this.#atLimit.get(key)
    return window !== undefined && window.resetAt > now ? window : undefined
  }

  /** Counts one hit for the key, opening a window if it has none; returns the window. */
  hit (key: string, now = Date.now()): Window {
    let window = this.peek(key, now)
    if (window === undefined) {
      this.#underLimit.delete(key)
      this.#atLimit.delete(key)
      if (this.#underLimit.size + this.#atLimit.size >= this.#capacity) this.#evict(now)
      window = { count: 0, resetAt: now + this.#timeWindow }
      this.#underLimit.set(key, window)
    }
    if (++window.count === this.#limit) {
      this.#underLimit.delete(key)
      this.#atLimit.set(key, window)
    }
    return window
  }

  /** Forgets the window worth least: an ended one at the limit, else the oldest under it, else the oldest at it. */
  #evict (now: number) {
    const [limited] = this.#atLimit
    if (limited !== undefined && (limited[1].resetAt <= now || this.#underLimit.size === 0)) this.#atLimit.delete(limited[0])
    else this.#underLimit.delete(this.#underLimit.keys().next().value!)
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
