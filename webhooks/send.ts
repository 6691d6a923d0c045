import http from 'node:http'
import https from 'node:https'
import { performance } from 'node:perf_hooks'
import type { AttemptOutcome } from '../stores/outbox.js'
import { checkLiteralHost, guardedLookup, type Networks } from './ssrf.js'

/** The User-Agent of every delivery, so that a receiver's logs and firewall can tell them apart. */
export const WEBHOOK_USER_AGENT = 'plant-store-webhooks'

// What of a receiver's answer is read: the status and headers matter, the body is drained and dropped.
const MAX_BODY_BYTES = 64 * 1024

export interface AttemptResult {
  outcome: AttemptOutcome
  status?: number
  /** A short reason for a failure: a network error code, "timeout", "blocked"; never a secret. */
  error?: string | undefined
  retryAfter?: string
  durationMs: number
}

/** Sends webhook requests to one endpoint over kept-alive connections, to checked addresses only. */
export class EndpointSender {
  private readonly agent: http.Agent
  private readonly lookup: ReturnType<typeof guardedLookup>

  constructor (private readonly url: URL, private readonly allowed: Networks, private readonly timeout: number, maxSockets: number) {
    const Agent = url.protocol === 'https:' ? https.Agent : http.Agent
    this.agent = new Agent({ keepAlive: true, maxSockets })
    this.lookup = guardedLookup(allowed)
  }

  /**
   * One attempt: POST `body` with `headers`, the whole exchange bounded by the timeout; a redirect
   * is a failure like any other non-2xx, never followed. `signal` aborts it (at shutdown).
   */
  send (headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<AttemptResult> {
    const start = performance.now()
    const done = (result: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...result, durationMs: performance.now() - start })
    try {
      checkLiteralHost(this.url, this.allowed)
    } catch {
      return Promise.resolve(done({ outcome: 'blocked', error: 'blocked' }))
    }
    return new Promise((resolve) => {
      let settled = false
      const settle = (result: Omit<AttemptResult, 'durationMs'>) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve(done(result))
      }
      const client = this.url.protocol === 'https:' ? https : http
      const request = client.request(this.url, {
        method: 'POST',
        agent: this.agent,
        lookup: this.lookup,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': WEBHOOK_USER_AGENT }
      }, (response) => {
        const status = response.statusCode!
        const retryAfter = response.headers['retry-after']
        let read = 0
        response.on('data', (chunk: Buffer) => {
          read += chunk.length
          // A receiver that streams without end is cut off: its status is known already.
          if (read > MAX_BODY_BYTES) response.destroy()
        })
        const finish = () => settle(status >= 200 && status < 300
          ? { outcome: 'success', status }
          : { outcome: status === 410 ? 'gone' : 'http_error', status, ...(retryAfter !== undefined && { retryAfter }) })
        response.on('end', finish)
        response.on('close', finish)
        response.on('error', finish)
      })
      const timer = setTimeout(() => {
        settle({ outcome: 'timeout', error: 'timeout' })
        request.destroy()
      }, this.timeout)
      const onAbort = () => {
        settle({ outcome: 'network', error: 'aborted at shutdown' })
        request.destroy()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      request.on('error', (error: NodeJS.ErrnoException) => {
        settle(error.code === 'EWEBHOOKBLOCKED'
          ? { outcome: 'blocked', error: 'blocked' }
          : { outcome: 'network', error: error.code })
      })
      request.end(body)
    })
  }

  close (): void {
    this.agent.destroy()
  }
}
