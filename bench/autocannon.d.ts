// The part of autocannon 8's programmatic API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Called before each request is sent; returns the request to send. */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
  }

  interface Options {
    url: string
    connections?: number
    /** Seconds. */
    duration?: number
    /** Requests in all, instead of a duration. */
    amount?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: Request[]
  }

  interface Histogram {
    average: number
    min: number
    max: number
    p50: number
    p90: number
    p99: number
    /** For `requests`: the requests completed. */
    total: number
    /** For `requests`: the requests sent. */
    sent: number
  }

  interface Result {
    requests: Histogram
    latency: Histogram
    /** Seconds. */
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop (): void
  }

  function autocannon (options: Options): Instance
  export default autocannon
  export type { Instance, Options, Request, Result }
}
