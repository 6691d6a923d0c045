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
 * Tracing (OTEL_*): left out of the bundle, imported by service/observe/tracing/ only when tracing is on,
 * and installed in the runtime folder only when asked for (--tracing).
 */
export const TRACING = [
  '@fastify/otel', '@opentelemetry/api', '@opentelemetry/context-async-hooks', '@opentelemetry/core',
  '@opentelemetry/exporter-trace-otlp-grpc', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/resources', '@opentelemetry/sdk-trace'
]

/**
 * Driver majors the lockfile does not hold (it holds the one this machine's Node runs), at the
 * version test:node-lines tests, as the runtime folder's lockfile records them with their
 * dependencies. better-sqlite3 13 ships its Node-API builds in its package: nothing to compile or
 * download at install.
 */
export const UNLOCKED_DRIVERS = {
  'better-sqlite3': {
    13: {
      'node_modules/better-sqlite3': {
        version: '13.2.0',
        integrity: 'sha512-Z8Q/9x/uNyKxA1v4FNodyItRVRw1TeKBrmj32JhxhR0ceNcBY+wMobt/Bv7M7TzwPAXjnZRtNaEsATnUZSKWZQ==',
        license: 'MIT',
        dependencies: { 'node-addon-api': '^8.0.0' },
        engines: { node: '>=22' }
      },
      'node_modules/node-addon-api': {
        version: '8.9.2',
        integrity: 'sha512-VijLXbi3UACN69I0JVXJsX4tjACjNoQDgv2gTF6sx2wWEi8tkSg2eX8p5gSIFi8z2+DL3oHmY6OyKce38SDolg==',
        license: 'MIT',
        engines: { node: '^18 || ^20 || >= 21' }
      }
    }
  }
}

/** The command that starts the service in the runtime folder (its `npm start`, a container's CMD). */
export const START_COMMAND = ['node', 'server.mjs']
