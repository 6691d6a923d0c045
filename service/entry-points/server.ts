import { randomBytes } from 'node:crypto'
import closeWithGrace from 'close-with-grace'
import type { FastifyBaseLogger } from 'fastify'
import { appOptions, connectionOptions, loggerOptions } from '../config/app-options.js'
import { ConfigError, corsOrigins, loadConfig, metricsAddress, readTokens, serviceRole, trustProxy, type Config } from '../config/index.js'
import { StoreOpenError } from '../../src/service-settings.js'
import { ignoreSignals } from './ignored-signals.js'
import { configHints } from '../config/hints.js'
import { loadTracing } from '../observe/tracing/index.js'

/**
 * Signals close-with-grace would take for a request to shut down, and must not: only SIGTERM and
 * SIGINT are. The others keep Node's default action. For a fatal one (SIGBUS, as when a file SQLite
 * maps into memory is truncated, SIGSEGV, SIGILL, SIGFPE) a listener would have the kernel re-run
 * the faulting instruction forever at 100 % CPU; by default it kills the process, a death its
 * supervisor sees. SIGHUP, SIGQUIT, SIGTRAP and SIGABRT keep their own meanings too; SIGUSR1 and SIGUSR2 are ignored (below).
 */
const NOT_SHUTDOWN_SIGNALS: closeWithGrace.Signals[] = ['SIGHUP', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2']

function exitWith (line: string): never {
  process.stderr.write(`${line}\n`)
  process.exit(1)
}

/** Configured tokens; without any, a token generated for this run (never in production). */
function tokensFor (config: Config): { tokens: string[], generated: boolean } {
  const tokens = readTokens(config)
  if (tokens.length > 0) return { tokens, generated: false }
  if (config.NODE_ENV === 'production') {
    throw new ConfigError('Invalid configuration: API_TOKENS or API_TOKENS_FILE must be set when NODE_ENV=production.')
  }
  return { tokens: [randomBytes(24).toString('base64url')], generated: true }
}

async function start () {
  // Before the app's log exists (a signal during start-up), a plain line on stderr.
  const started: { log?: FastifyBaseLogger } = {}
  ignoreSignals(() => started.log)
  const config = loadConfig(process.env)
  const role = serviceRole(config)
  // A delivery-only instance answers no request that needs a token.
  const { tokens, generated } = role.api ? tokensFor(config) : { tokens: [], generated: false }
  const metrics = metricsAddress(config)
  const options = appOptions(config, tokens)
  const server = {
    ...connectionOptions(config),
    corsOrigins: corsOrigins(config),
    // The client's address, behind the proxies TRUST_PROXY names: for the failure throttle and the log.
    trustProxy: trustProxy(config)
  }
  const tracing = await loadTracing(config)
  // Every setting has been read: only now the app, so that a refused one costs no more than that.
  const [{ buildApp }, { metricsListening }] = await Promise.all([import('../app.js'), import('../observe/metrics-listener.js')])
  const app = await buildApp(options, {
    ...server,
    docs: config.DOCS === 'on',
    metricsListener: metrics !== undefined,
    tracing,
    api: role.api,
    logger: {
      ...loggerOptions(config.LOG_LEVEL),
      // Readable lines for a person at a terminal, JSON for a log collector, and always in
      // production, where a terminal (docker run -t, a console) still feeds a collector.
      ...(process.stdout.isTTY && config.NODE_ENV !== 'production' ? { transport: { target: 'pino-pretty' } } : {})
    }
  })
  started.log = app.log
  for (const hint of configHints(process.env)) app.log.warn(hint)
  if (role.notice !== undefined) app.log.warn(role.notice)
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT, logger: app.log, skip: NOT_SHUTDOWN_SIGNALS }, async ({ signal, err }) => {
    /* c8 ignore next: only an uncaught exception, which no request can cause, comes here */
    if (err) app.log.error({ err }, 'shutting down after an uncaught error')
    else app.log.info({ signal }, 'shutting down: finishing requests in flight')
    await app.close()
  })
  // First: once the API's address is logged, /metrics answers too. Closed last, with the app.
  if (metrics !== undefined) {
    await app.metricsListener!.listen({ ...metrics, listenTextResolver: metricsListening }).catch((error: Error) => {
      throw new Error(`the metrics listener (METRICS_HOST, METRICS_PORT): ${error.message}`)
    })
  }
  await app.listen({ host: config.HOST, port: config.PORT })
  if (generated) {
    // A plain line on stderr, printed once when the service is up: never part of the JSON log.
    process.stderr.write(`No API_TOKENS or API_TOKENS_FILE set: this run accepts the generated token ${tokens[0]}\n`)
  }
}

try {
  // `node server.mjs <command> ...`: an operator's command (backup) instead of the service.
  if (process.argv.length > 2) process.exit(await (await import('./commands.js')).runCommand(process.argv.slice(2)))
  await start()
} catch (error) {
  if (error instanceof ConfigError) exitWith(error.message)
  if (error instanceof StoreOpenError) {
    exitWith(`Invalid configuration: DATABASE_URL cannot be opened (${error.message}); set DATABASE_URL to a writable sqlite:<path>, a reachable postgres:// database or memory:.`)
  }
  // Anything else, such as a port already in use: one line too, not a stack trace.
  exitWith(`Cannot start: ${(error as Error).message}`)
}
