import { Pool, type Dispatcher } from 'undici'
import type { Clock } from '../../http/clock.js'
import type { AttemptOutcome } from '../../store/outbox.js'
import { checkLiteralHost, guardedLookup, type Networks } from './ssrf.js'

/** The User-Agent of every delivery, so that a receiver's logs and firewall can tell them apart. */
export const WEBHOOK_USER_AGENT = 'plant-store-webhooks'

// What of a receiver's answer is read: the status and headers matter, the body is drained and dropped.
const MAX_BODY_BYTES = 64 * 1024
// Interim (1xx) answers before the final one: a receiver that sends more, or more bytes of them,
// holds the attempt (and a connection) for nothing and is cut off.
export const MAX_INTERIM_RESPONSES = 8
export const MAX_INTERIM_BYTES = 64 * 1024
/** The error of an attempt ended by abort(), at shutdown. */
export const ABORTED = 'aborted at shutdown'
const ABORTED_CODE = 'EWEBHOOKABORTED'
// undici ends the connection at an unasked-for 100 Continue with this socket error.
const INTERIM_REFUSED = 'bad response'

export interface AttemptResult {
  outcome: AttemptOutcome
  status?: number
  /** A short reason for a failure: a network error code, "timeout", "blocked"; never a secret. */
  error?: string | undefined
  retryAfter?: string
  durationMs: number
}

type Outcome = Omit<AttemptResult, 'durationMs'>

const timedOut = (): Outcome => ({ outcome: 'timeout', error: 'timeout' })

function isBlockedLiteral (url: URL, allowed: Networks): boolean {
  try {
    checkLiteralHost(url, allowed)
    return false
  } catch {
    return true
  }
}

/** The value of the header `name` (lower case) in undici's raw [name, value, ...] list. */
function rawHeader (raw: Buffer[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === name.length && raw[i].toString('latin1').toLowerCase() === name) return raw[i + 1].toString('latin1')
  }
  return undefined
}

function rawSize (raw: Buffer[]): number {
  let size = 16 // the status line
  for (const part of raw) size += part.length + 2
  return size
}

/**
 * One attempt as an undici dispatch handler: the answer's status and Retry-After are kept, its body
 * counted and dropped, interim answers counted; the first of finish, failure, timeout or abort wins.
 */
class Attempt implements Dispatcher.DispatchHandler {
  private abortRequest?: (reason?: Error) => void
  private settled = false
  private status = 0
  private retryAfter?: string
  private read = 0
  private interim = 0
  private interimBytes = 0
  private readonly cancelTimer: () => void
  private readonly start: number
  private readonly deadline: number

  constructor (private readonly resolve: (result: AttemptResult) => void, timeout: number, private readonly clock: Clock) {
    this.start = clock.now()
    this.deadline = this.start + timeout
    // The timer runs before the loop reads its sockets: an answer that came while this thread was
    // stalled past the deadline is read first (one turn later), and is the receiver's answer in time.
    this.cancelTimer = clock.schedule(() => setImmediate(() => this.cut(timedOut())), timeout)
  }

  private settle (result: Outcome): void {
    if (this.settled) return
    this.settled = true
    this.cancelTimer()
    // Each outcome is an object of its own: completed in place. Never below 0, should the clock be set back.
    const done = result as AttemptResult
    done.durationMs = Math.max(0, this.clock.now() - this.start)
    this.resolve(done)
  }

  /** Ends the attempt with `result` and drops its connection (at once, or once it has one). */
  private cut (result: Outcome): void {
    this.settle(result)
    this.abortRequest?.(new Error(result.error))
  }

  private answered (): Outcome {
    const status = this.status
    if (status >= 200 && status < 300) return { outcome: 'success', status }
    return { outcome: status === 410 ? 'gone' : 'http_error', status, ...(this.retryAfter !== undefined && { retryAfter: this.retryAfter }) }
  }

  onConnect (abort: (reason?: Error) => void): void {
    this.abortRequest = abort
    // On a stalled loop the connection can come before the timer of an attempt already past its
    // deadline has run: the deadline decides, and such an attempt is never sent.
    if (this.clock.now() >= this.deadline) this.settle(timedOut())
    // Timed out or aborted while queued for a connection: never sent.
    if (this.settled) abort(new Error('ended before it was sent'))
  }

  onHeaders (statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) {
      this.interim++
      this.interimBytes += rawSize(rawHeaders)
      if (this.interim > MAX_INTERIM_RESPONSES || this.interimBytes > MAX_INTERIM_BYTES) {
        this.cut({ outcome: 'http_error', status: statusCode, error: 'too many interim responses' })
      }
      return true
    }
    this.status = statusCode
    this.retryAfter = rawHeader(rawHeaders, 'retry-after')
    return true
  }

  onData (chunk: Buffer): boolean {
    this.read += chunk.length
    // A receiver that streams without end is cut off: its status is known already.
    if (this.read > MAX_BODY_BYTES) this.cut(this.answered())
    return true
  }

  onComplete (): void {
    this.settle(this.answered())
  }

  onError (error: Error & { code?: string }): void {
    if (error.code === ABORTED_CODE) return this.settle({ outcome: 'network', error: ABORTED })
    if (this.status !== 0) return this.settle(this.answered())
    if (error.code === 'EWEBHOOKBLOCKED') return this.settle({ outcome: 'blocked', error: 'blocked' })
    if (error.code === 'UND_ERR_SOCKET' && error.message === INTERIM_REFUSED) {
      return this.settle({ outcome: 'http_error', status: 100, error: 'unexpected 100 Continue' })
    }
    this.settle({ outcome: 'network', error: error.code })
  }
}

/** Sends webhook requests to one endpoint over kept-alive connections, to checked addresses only. */
export class EndpointSender {
  private readonly pool: Pool
  private readonly path: string
  /** The URL's host is an address refused (a name is checked at each connect, by the lookup). */
  private readonly blocked: boolean

  /** `clock` times each attempt and ends it at the timeout. */
  constructor (url: URL, allowed: Networks, private readonly timeout: number, maxSockets: number, private readonly clock: Clock) {
    // The connector resolves through the filter: the socket connects only to an address checked there.
    this.pool = new Pool(url.origin, { connections: maxSockets, pipelining: 1, connect: { lookup: guardedLookup(allowed) } })
    this.path = `${url.pathname}${url.search}`
    // The URL and the allowed networks never change: a literal address is judged once, not per attempt.
    this.blocked = isBlockedLiteral(url, allowed)
  }

  /**
   * One attempt: POST `body` with `headers`, the whole exchange bounded by the timeout; a redirect
   * is a failure like any other non-2xx, never followed. abort() ends it (at shutdown).
   */
  send (headers: Record<string, string>, body: string | Buffer): Promise<AttemptResult> {
    return new Promise((resolve) => {
      const attempt = new Attempt(resolve, this.timeout, this.clock)
      if (this.blocked) return attempt.onError(Object.assign(new Error('blocked'), { code: 'EWEBHOOKBLOCKED' }))
      this.pool.dispatch({ method: 'POST', path: this.path, headers: { ...headers, 'user-agent': WEBHOOK_USER_AGENT }, body }, attempt)
    })
  }

  /**
   * Ends every attempt not yet settled, queued or in flight (at shutdown), each as a `network`
   * failure, its connection dropped; the pool is closed. (The pool ends them all with this error:
   * no attempt is tracked for it, which cost the garbage collector more than the attempt itself.)
   */
  abort (): void {
    this.close(Object.assign(new Error(ABORTED), { code: ABORTED_CODE }))
  }

  close (error?: Error): void {
    // Destroying a pool rejects only if it is already destroyed: nothing to do then.
    /* c8 ignore next */
    this.pool.destroy(error ?? null).catch(() => {})
  }
}
