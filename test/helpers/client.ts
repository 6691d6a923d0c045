import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import type { ClientClock, InternalClientOptions } from '../../client/clock.js'
import { PlantStoreClient, type PlantStoreClientOptions } from '../../client/index.js'
import type { PlantStoreOptions } from '../../src/plugin.js'
import { buildApp } from '../../service/app.js'
import { DEFAULT_OPTIONS, TOKEN } from './app.js'

/** The real service, listening on a free local port, on the given store: its URL. */
export async function listeningService (t: Test, options: Partial<PlantStoreOptions> = {}): Promise<string> {
  const app = await buildApp({ ...DEFAULT_OPTIONS, store: 'memory:', ...options })
  t.teardown(() => app.close())
  return app.listen({ host: '127.0.0.1', port: 0 })
}

/** One request as the client's fetch sent it. */
export interface Attempt {
  method: string
  url: string
  /** The answer's status, or undefined for a network failure. */
  status?: number
}

/** The global fetch, with a record of every request the client sends through it. */
export function recordingFetch () {
  const attempts: Attempt[] = []
  const recorded: typeof fetch = async (input, init) => {
    const attempt: Attempt = { method: init?.method ?? 'GET', url: String(input) }
    attempts.push(attempt)
    const response = await fetch(input, init)
    attempt.status = response.status
    return response
  }
  return { fetch: recorded, attempts }
}

/** A client of the service at `baseUrl` with the test token, its requests recorded; `clock` is the client's internal option. */
export function recordedClient (baseUrl: string, options: Partial<PlantStoreClientOptions> & InternalClientOptions = {}) {
  const recorder = recordingFetch()
  const client = new PlantStoreClient({ baseUrl, token: TOKEN, fetch: recorder.fetch, ...options } as PlantStoreClientOptions)
  return { client, ...recorder }
}

/**
 * A client's clock (`clock`, e.g. test/helpers/fake-clock.ts) that tells of each timer the client
 * sets: `delays` lists them in order, `nextTimer()` resolves with the delay of the next one not yet
 * taken, once it is set.
 */
export function timersOf<C extends ClientClock> (clock: C) {
  const delays: number[] = []
  const waiting: Array<(ms: number) => void> = []
  let taken = 0
  return {
    ...clock,
    delays,
    schedule (fn: () => void, ms: number) {
      delays.push(ms)
      waiting.shift()?.(ms)
      return clock.schedule(fn, ms)
    },
    nextTimer (): Promise<number> {
      const index = taken++
      return index < delays.length ? Promise.resolve(delays[index]) : new Promise((resolve) => waiting.push(resolve))
    }
  }
}

export type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => unknown

/** A node:http server on a free local port that hands each request, its body read, to `handler`: its URL. */
export async function httpServer (t: Test, handler: Handler): Promise<string> {
  const server = createServer(async (request, response) => {
    let body = ''
    for await (const chunk of request) body += chunk
    try {
      await handler(request, response, body)
    } catch (error) {
      // A failing test server answers, so that the test fails rather than waits forever.
      answer(response, 500, JSON.stringify({ error: 500, message: `test server: ${(error as Error).message}` }))
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Answers with a status, headers and a body written as given. */
export function answer (response: ServerResponse, status: number, body = '', headers: Record<string, string> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body)
}

/** Sends a request on to the service at `target` as it came, and resolves with the service's answer. */
export async function forward (target: string, request: IncomingMessage, body: string) {
  const headers = new Headers()
  for (const name of ['authorization', 'content-type', 'if-match', 'if-none-match']) {
    const value = request.headers[name]
    if (typeof value === 'string') headers.set(name, value)
  }
  const response = await fetch(target + request.url!, { method: request.method, headers, body: body === '' ? undefined : body })
  // What the client reads of an answer's headers: its ETag, its next page.
  const passed = Object.fromEntries(['etag', 'link'].flatMap((name) => response.headers.has(name) ? [[name, response.headers.get(name)!]] : []))
  return { status: response.status, text: await response.text(), headers: passed }
}

/** Passes a service's answer on to the client unchanged. */
export async function relay (target: string, request: IncomingMessage, response: ServerResponse, body: string) {
  const { status, text, headers } = await forward(target, request, body)
  answer(response, status, text, headers)
}

export interface FaultyProxy {
  url: string
  /** The next `method` request meets the fault again. */
  rearm (): void
}

/**
 * A proxy in front of the service at `target` that relays every request, except the first one
 * with `method`, which is handed to `fault` (which may forward it, then answer something else).
 */
export async function faultyProxy (t: Test, target: string, method: string, fault: Handler): Promise<FaultyProxy> {
  let armed = true
  const url = await httpServer(t, async (request, response, body) => {
    if (request.method === method && armed) {
      armed = false
      return fault(request, response, body)
    }
    await relay(target, request, response, body)
  })
  return { url, rearm: () => { armed = true } }
}

/** The requests a client sent, each as "METHOD status" (status undefined: no answer). */
export const trace = (attempts: Attempt[]) => attempts.map(({ method, status }) => `${method} ${status}`)
