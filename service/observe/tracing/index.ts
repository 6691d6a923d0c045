import { ConfigError, type Config } from '../../config/index.js'
import { tracingOn } from './settings.js'
import type { Tracing } from './types.js'

export type { Tracing }

/** The database system of a store URL, as OpenTelemetry names it. */
export const systemOf = (databaseUrl: string) => databaseUrl.startsWith('sqlite:') ? 'sqlite' : databaseUrl.startsWith('memory:') ? 'memory' : 'postgresql'

/**
 * Tracing, when the OTEL_* settings turn it on; otherwise undefined, and nothing of OpenTelemetry
 * is loaded: its packages are imported here, dynamically, and only then.
 */
export async function loadTracing (config: Config, importSdk = () => import('./sdk.js')): Promise<Tracing | undefined> {
  if (!tracingOn(config)) return undefined
  let sdk: typeof import('./sdk.js')
  try {
    sdk = await importSdk()
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error
    throw new ConfigError('Invalid configuration: the OTEL_* settings turn tracing on, and its packages are not installed ' +
      `(${(error as Error).message.split('\n')[0]}); make the runtime folder with --tracing (npm run runtime -- --tracing), or unset them.`)
  }
  return sdk.startTracing(config, systemOf(config.DATABASE_URL))
}
