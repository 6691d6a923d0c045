import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { buildApp, type ServerOptions } from '../../service/app.js'
import { appOptions, connectionOptions } from '../../service/config/app-options.js'
import { loadConfig } from '../../service/config/index.js'
import type { PlantStoreOptions } from '../../src/plugin.js'
import { OTHER_TOKEN, TOKEN } from './plugin-app.js'

// The plugin tier's helpers, which work on the service as well.
export { assertCreateShed, AUTH, collectLogs, createPlant, failingStore, JSON_TYPE, OTHER_TOKEN, storedPlants, TOKEN } from './plugin-app.js'

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
