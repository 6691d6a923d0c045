import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type FastifyServerOptions, type InjectOptions, type LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import plantStore, { type PlantStoreOptions } from '../../src/plugin.js'

export const TOKEN = 'test-token-0123456789'
export const OTHER_TOKEN = 'another-accepted-token'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_TYPE = { 'content-type': 'application/json' }

/** What these helpers need of an app: the plugin on a bare host, or the whole service. */
export type Injectable = Pick<FastifyInstance, 'inject'>

/**
 * The plugin alone on a bare `Fastify()`, registered as a host registers it, with the test's two
 * tokens and a memory store the test can look into (returned, and used unless `options` gives
 * another store). Nothing of the service is around it: no Error-shaped 404 outside the plugin, no
 * security headers, request log, CORS, compression or docs. `fastifyOptions` is the host's (its logger).
 */
export async function buildPlugin (t: Test, options: Partial<PlantStoreOptions> = {}, fastifyOptions: FastifyServerOptions = {},
  thenRegister?: (app: FastifyInstance) => Promise<void>) {
  const store: PlantStore = createMemoryStore()
  const app = Fastify(fastifyOptions)
  t.teardown(() => app.close())
  await app.register(plantStore, { tokens: [TOKEN, OTHER_TOKEN], store, ...options })
  // What the host registers after the plugin, before it is ready.
  await thenRegister?.(app)
  await app.ready()
  return { app, store }
}

type StoreOperation = 'create' | 'get' | 'list' | 'delete' | 'ping'

/** A memory store whose `operations` (all of them unless told) throw what `failure()` returns. */
export function failingStore (failure: () => unknown, operations: StoreOperation[] = ['create', 'get', 'list', 'delete', 'ping']): PlantStore {
  const fail = async () => { throw failure() }
  return { ...createMemoryStore(), ...Object.fromEntries(operations.map((operation) => [operation, fail])) }
}

/** POST /plants with a valid token; `payload` is sent as given (a string keeps big ids exact). */
export function createPlant (app: Injectable, payload: string | Buffer | object, headers: InjectOptions['headers'] = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...AUTH, ...JSON_TYPE, ...headers },
    payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload)
  })
}

/** Every stored plant, for checking what a request did or did not store. */
export async function storedPlants (store: PlantStore) {
  return store.list({ limit: 1000 })
}

/** A plant create shed for load, as a client sees it: 503, Retry-After, the Error shape, nothing stored. */
export async function assertCreateShed (t: Test, app: Injectable, store: PlantStore, retryAfter: number) {
  const response = await createPlant(app, { id: 1, name: 'n' })
  t.equal(response.statusCode, 503)
  t.equal(response.headers['retry-after'], String(retryAfter))
  t.same(response.json(), { error: 503, message: 'The service is overloaded, try again later' })
  t.same(await storedPlants(store), [])
}

/** A logger option that keeps the app's log lines, parsed, for the test to read. */
export function collectLogs (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()))
      done()
    }
  })
  return { lines, logger: { level, stream } }
}
