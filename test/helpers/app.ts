import { Writable } from 'node:stream'
import type { InjectOptions } from 'fastify'
import type { Test } from 'tap'
import { createMemoryStore } from '../../stores/memory/store.js'
import type { PlantStore } from '../../stores/types.js'
import { appOptions, buildApp, type ServerOptions } from '../../service/app.js'
import { loadConfig } from '../../service/config.js'
import type { PlantStoreOptions } from '../../src/plugin.js'

export const TOKEN = 'test-token-0123456789'
export const OTHER_TOKEN = 'another-accepted-token'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_TYPE = { 'content-type': 'application/json' }

export type App = Awaited<ReturnType<typeof buildApp>>

/** The options the server derives from an environment without settings. */
export const DEFAULT_OPTIONS = appOptions(loadConfig({}), [TOKEN, OTHER_TOKEN])

/** The real app, as the server builds it, on a memory store the test can look into. */
export async function build (t: Test, options: Partial<PlantStoreOptions> = {}, serverOptions: ServerOptions = {}) {
  const store: PlantStore = createMemoryStore()
  const app = await buildApp({ ...DEFAULT_OPTIONS, store, ...options }, serverOptions)
  t.teardown(() => app.close())
  return { app, store }
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
