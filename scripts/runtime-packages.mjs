// The packages the bundled service (dist/server.mjs) loads from node_modules at run time, written
// once for the bundler (which leaves them out of the bundle) and for the runtime folder (which
// installs them and nothing else).

/** Left out of the bundle: native addons, and pino's worker thread, started by file name. */
export const UNBUNDLED = ['pino', 'pino-pretty', 'thread-stream']

/** The store drivers, each loaded only for its store. */
export const DRIVERS = { sqlite: 'better-sqlite3', postgres: 'pg' }

/**
 * Bundled, but reads files next to its own modules at run time (Swagger UI's page and assets),
 * so it must be installed too.
 */
export const READS_ITS_FILES = ['@fastify/swagger-ui']

/**
 * Tracing (OTEL_*): left out of the bundle, imported by service/tracing/ only when tracing is on,
 * and installed in the runtime folder only when asked for (--tracing).
 */
export const TRACING = [
  '@fastify/otel', '@opentelemetry/api', '@opentelemetry/context-async-hooks', '@opentelemetry/core',
  '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/resources', '@opentelemetry/sdk-trace'
]
