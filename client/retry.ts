import type { ClientClock } from './clock.js'

/** When and how long the client waits before trying a request again. */
export interface RetryOptions {
  /** Attempts in all, the first one included; 1 turns retries off. Default 3. */
  attempts?: number
  /** The wait before the first retry when the answer has no Retry-After, in ms; it doubles with each retry and is jittered (half of it to all of it). Default 100. */
  baseDelay?: number
  /** The longest such wait, in ms. Default 2000. A Retry-After may ask for more, up to `maxElapsed`. */
  maxDelay?: number
  /** No retry starts later than this many ms after the call began: a wait past it ends the call with the last error. Default 30000. */
  maxElapsed?: number
}

export type RetrySettings = Required<RetryOptions>

export const DEFAULT_RETRY: RetrySettings = { attempts: 3, baseDelay: 100, maxDelay: 2000, maxElapsed: 30_000 }

// The answers that say "not now, try again later": a rate limit, an overloaded service or store.
const RETRY_STATUSES = new Set([429, 503])

/** The settings with their defaults, each checked: a RangeError names the first one that is wrong. */
export function retrySettings (options: RetryOptions | false = {}): RetrySettings {
  const settings = { ...DEFAULT_RETRY, ...(options === false ? { attempts: 1 } : options) }
  if (!Number.isInteger(settings.attempts) || settings.attempts < 1) {
    throw new RangeError(`retry.attempts must be an integer of at least 1, not ${settings.attempts}`)
  }
  for (const name of ['baseDelay', 'maxDelay', 'maxElapsed'] as const) {
    const value = settings[name]
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`retry.${name} must be a number of ms, at least 0, not ${value}`)
  }
  return settings
}

/** The wait a Retry-After header asks for, in ms: delay-seconds or an HTTP date; undefined without a valid one. */
export function retryAfterDelay (header: string | null, now = Date.now()): number | undefined {
  const value = header?.trim() ?? ''
  if (/^\d+$/.test(value)) return Number(value) * 1000
  // Every HTTP date names its day; without a letter, Date.parse would take "1.5" or "-1" for a date.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : NaN
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** The jittered exponential wait before retry number `retry` (1 for the first): half of it to all of it. */
function backoffDelay (retry: number, { baseDelay, maxDelay }: RetrySettings): number {
  const ceiling = Math.min(maxDelay, baseDelay * 2 ** (retry - 1))
  return ceiling / 2 + Math.random() * ceiling / 2
}

/** Waits `ms` on `clock`; an abort of `signal` rejects with its reason. */
export function sleep (ms: number, clock: ClientClock, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted()
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel()
      reject(signal!.reason)
    }
    const cancel = clock.schedule(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** What an attempt that got an answer hands back: at least the answer's status and headers. */
export interface Answered {
  response: Response
}

export interface Sent<A extends Answered> {
  /** The last answer: a success, a refusal not worth retrying, or the last retryable one. */
  answer: A
  /**
   * An earlier attempt may have been carried out: it was answered 503 (a PostgreSQL create that
   * timed out on the service's side may still commit) or got no whole answer (no headers, or a
   * body cut short or stalled). A 429 is not uncertain: the rate limit refuses a request before it runs.
   */
  uncertain: boolean
}

/**
 * Sends a request until it gets an answer that is not 429 or 503 (nor a failure: `send` rejects
 * when no whole answer came), within the attempts and the time allowed, waiting between attempts
 * as Retry-After asks, and at least the jittered backoff. An abort of `signal` ends it at once
 * with the signal's reason. `send` reads each answer's body itself, so that an answer cut short
 * is retried as no answer at all. The waits are on `clock`.
 */
export async function sendWithRetries<A extends Answered> (
  send: () => Promise<A>, settings: RetrySettings, clock: ClientClock, signal?: AbortSignal
): Promise<Sent<A>> {
  const started = clock.now()
  // An answer, or no answer: the failure `send` rejected with.
  const attempt = async (): Promise<{ answer?: A, failure?: unknown }> => {
    signal?.throwIfAborted()
    try {
      return { answer: await send() }
    } catch (failure) {
      if (signal?.aborted) throw signal.reason
      return { failure }
    }
  }
  let uncertain = false
  let attempts = 1
  let outcome = await attempt()
  while ((outcome.answer === undefined || RETRY_STATUSES.has(outcome.answer.response.status)) && attempts < settings.attempts) {
    const response = outcome.answer?.response
    const wait = Math.max(retryAfterDelay(response?.headers.get('retry-after') ?? null, clock.now()) ?? 0, backoffDelay(attempts, settings))
    if (clock.now() - started + wait > settings.maxElapsed) break
    uncertain ||= response === undefined || response.status === 503
    await sleep(wait, clock, signal)
    attempts++
    outcome = await attempt()
  }
  if (outcome.answer === undefined) throw outcome.failure
  return { answer: outcome.answer, uncertain }
}
