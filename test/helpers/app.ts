import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { InjectOptions } from 'fastify'
import type { Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { appOptions, buildApp, connectionOptions, type ServerOptions } from '../../service/app.js'
import { loadConfig } from '../../service/config/index.js'
import type { PlantStoreOptions } from '../../src/plugin.js'

export const TOKEN = 'test-token-0123456789'
export const OTHER_TOKEN = 'another-accepted-token'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_TYPE = { 'content-type': 'application/json' }

export type App = Awaited<ReturnType<typeof buildApp>>

/**
 * The options the server derives from an environment without settings, but with load shedding
 * off: a loaded machine stalls a test's event loop past the default limit and a request meant to
 * reach a route gets "overloaded" 503 instead. Tests of load shedding set `pressure` themselves.
 */
export const DEFAULT_OPTIONS = appOptions(loadConfig({ PRESSURE_MAX_EVENT_LOOP_DELAY: '0' }), [TOKEN, OTHER_TOKEN])

/** The connection settings the server derives from these environment variables. */
export const settingsFrom = (env: Record<string, string>): ServerOptions => connectionOptions(loadConfig(env))

/** The real app, as the server builds it, on a memory store the test can look into. */
export async function build (t: Test, options: Partial<PlantStoreOptions> = {}, serverOptions: ServerOptions = {}) {
  const store: PlantStore = createMemoryStore()
  const app = await buildApp({ ...DEFAULT_OPTIONS, store, ...options }, serverOptions)
  t.teardown(() => app.close())
  return { app, store }
}

/** The app `build` makes, listening on a loopback port: its port, URL and the store it uses. */
export async function listening (t: Test, options: Partial<PlantStoreOptions> & { store?: PlantStore } = {}, serverOptions: ServerOptions = {}) {
  const built = await build(t, options, serverOptions)
  await built.app.listen({ host: '127.0.0.1', port: 0 })
  const port = (built.app.server.address() as AddressInfo).port
  return { app: built.app, store: options.store ?? built.store, port, url: `http://127.0.0.1:${port}` }
}

type StoreOperation = 'create' | 'get' | 'list' | 'delete' | 'ping'

/** A memory store whose `operations` (all of them unless told) throw what `failure()` returns. */
export function failingStore (failure: () => unknown, operations: StoreOperation[] = ['create', 'get', 'list', 'delete', 'ping']): PlantStore {
  const fail = async () => { throw failure() }
  return { ...createMemoryStore(), ...Object.fromEntries(operations.map((operation) => [operation, fail])) }
}

/** POST /plants with a valid token; `payload` is sent as given (a string keeps big ids exact). */
export function createPlant (app: App, payload: string | Buffer | object, headers: InjectOptions['headers'] = {}) {
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
export async function assertCreateShed (t: Test, app: App, store: PlantStore, retryAfter: number) {
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
