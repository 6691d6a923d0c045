import { once } from 'node:events'
import { request, type IncomingMessage, type ServerResponse } from 'node:http'
import Fastify from 'fastify'
import type { Test } from 'tap'
import auth from '../../plugins/auth/index.js'
import feedPlugin, { feedOf } from '../../plugins/feed/index.js'
import { resolveFeed, type FeedOptions } from '../../plugins/feed/settings.js'
import errorHandler from '../../plugins/http/error-handler.js'
import jsonBody from '../../plugins/http/json-body.js'
import strictValidation from '../../plugins/http/validation.js'
import storePlugin from '../../plugins/store/index.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { FeedPosition, OutboxOptions, WebhookOutbox } from '../../plugins/store/outbox.js'
import changesRoutes from '../../routes/changes.js'
import plantRoutes from '../../routes/plants.js'
import { DEFAULT_MAX_TEXT_LENGTH } from '../../schemas/index.js'
import { fakeClock } from './fake-clock.js'
import { OTHER_TOKEN, TOKEN } from './plugin-app.js'

/**
 * The feed's routes as the plugin registers them (validation, errors, the store, the feed, the
 * bearer auth, GET /plants/changes and the plant routes), on a fake clock the test moves: its
 * heartbeats, lifetimes and waits. Listening on a loopback port; `rowsRead` counts the events the
 * feed has read from the store (`gate`, when set, is awaited before each read: a slow store),
 * `responses` holds each request's raw response. An onRequest hook sets `x-hook: set` on each
 * answer, as the rate limit and CORS plugins set theirs.
 */
export async function listeningFeed (t: Test, feed: Exclude<FeedOptions, false> = {}, maxTextLength = DEFAULT_MAX_TEXT_LENGTH) {
  const clock = fakeClock()
  const memory = createMemoryStore()
  const counted: { rowsRead: number, gate?: Promise<void> | undefined, hookGate?: Promise<void> | undefined } = { rowsRead: 0 }
  const countReads = (outbox: WebhookOutbox): WebhookOutbox => {
    const readFeed = outbox.readFeed.bind(outbox)
    outbox.readFeed = async (after: FeedPosition | undefined, limit: number) => {
      await counted.gate
      const read = await readFeed(after, limit)
      counted.rowsRead += read.rows.length
      return read
    }
    return outbox
  }
  const store = { ...memory, openOutbox: async (options: OutboxOptions) => countReads(await memory.openOutbox!(options)) }
  const responses: ServerResponse[] = []
  const app = Fastify()
  const config = resolveFeed(feed)!
  await app.register(async (scope) => {
    await scope.register(strictValidation, { maxTextLength })
    await scope.register(jsonBody)
    await scope.register(errorHandler, {})
    await scope.register(storePlugin, { store })
    await scope.register(feedPlugin, { config, webhooks: false, clock })
    await scope.register(async (guarded) => {
      await guarded.register(auth, { tokens: [TOKEN, OTHER_TOKEN], failureLimit: false })
      guarded.addHook('onRequest', async (_request, reply) => {
        responses.push(reply.raw)
        reply.header('x-hook', 'set')
        // `hookGate`, when set, holds each request before its handler (a slow hook of the host's).
        await counted.hookGate
      })
      const routes = { maxTextLength, tag: 'plants', hostAuth: false, config: {} }
      await guarded.register(changesRoutes, routes)
      await guarded.register(plantRoutes, { ...routes, bodyLimit: 1024 * 1024 })
    })
    scope.addHook('onReady', async () => { Object.assign(counted, { feed: feedOf(scope) }) })
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address() as { port: number }
  return { app, clock, config, counted, responses, url: `http://127.0.0.1:${address.port}` }
}

/** One Server-Sent Event as a client parses it (a block with data: one with only an id dispatches none). */
export interface ServerSentEvent { id: string | undefined, event: string | undefined, data: string }

/**
 * GET `url` as a Server-Sent Events client (node:http: its destroy() closes the socket at once, where
 * fetch's abort leaves it for undici's keep-alive): the answer's status, headers, the events and
 * comment lines so far, the last event ID as EventSource keeps it (set by any `id:` line); `until` reads on until a condition holds or the stream ends; `body` the
 * whole text of an answer that ends (an error's JSON).
 */
export async function openStream (url: string, headers: Record<string, string>) {
  const req = request(url, { headers })
  req.end()
  const [response] = await once(req, 'response') as [IncomingMessage]
  response.setEncoding('utf8')
  const state = { events: [] as ServerSentEvent[], comments: [] as string[], lastEventId: undefined as string | undefined, ended: false, text: '', all: '' }
  let told: (() => void) | undefined
  const parse = () => {
    let end: number
    while ((end = state.text.indexOf('\n\n')) !== -1) {
      const block = state.text.slice(0, end)
      state.text = state.text.slice(end + 2)
      const event: ServerSentEvent = { id: undefined, event: undefined, data: '' }
      let isEvent = false
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) state.comments.push(line)
        const field = /^(id|event|data): (.*)$/.exec(line)
        if (field === null) continue
        if (field[1] === 'data') {
          isEvent = true
          event.data += field[2]
        } else event[field[1] as 'id' | 'event'] = field[2]
        if (field[1] === 'id') state.lastEventId = field[2]
      }
      if (isEvent) state.events.push(event)
    }
  }
  response.on('data', (chunk: string) => {
    state.text += chunk
    state.all += chunk
    parse()
    told?.()
  })
  const ended = () => { state.ended = true; told?.() }
  response.once('end', ended)
  response.once('error', ended)
  response.once('close', ended)
  return {
    status: response.statusCode!,
    headers: response.headers,
    state,
    response,
    async until (done: () => boolean): Promise<void> {
      while (!done() && !state.ended) await new Promise<void>((resolve) => { told = resolve })
    },
    async body (): Promise<string> {
      while (!state.ended) await new Promise<void>((resolve) => { told = resolve })
      return state.all
    },
    close: () => req.destroy()
  }
}
