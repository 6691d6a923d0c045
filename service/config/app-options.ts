import type { FastifyRequest } from 'fastify'
import type { PlantStoreOptions } from '../../src/service-api.js'
import { DEFAULT_RETENTION } from '../../src/service-settings.js'
import type { ServerOptions } from '../app.js'
import { SERVICE_OPENAPI_NAMES } from '../docs/names.js'
import { pathOf } from '../observe/request-log.js'
import { connectionLimit, openFilesLimit, readFeedSettings, readWebhooks, tokenlessLimit, type Config } from './index.js'

// What the app is built with, as the settings give it: each setting is checked here, before the
// app is loaded (service/entry-points/server.ts), so that a refused one costs no more than reading them.

/** The app's options as the configuration gives them: what the server entry and the tests use. */
export function appOptions (config: Config, tokens: readonly string[]): PlantStoreOptions {
  const feed = readFeedSettings(config)
  return {
    tokens,
    store: config.DATABASE_URL,
    bodyLimit: config.BODY_LIMIT,
    maxTextLength: config.MAX_TEXT_LENGTH,
    pressure: {
      maxEventLoopDelay: config.PRESSURE_MAX_EVENT_LOOP_DELAY,
      maxEventLoopUtilization: config.PRESSURE_MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: config.PRESSURE_MAX_HEAP_USED_BYTES
    },
    rateLimit: config.RATE_LIMIT_MAX > 0 ? { max: config.RATE_LIMIT_MAX, timeWindow: config.RATE_LIMIT_WINDOW } : undefined,
    authFailureLimit: config.AUTH_FAILURE_MAX > 0 ? { max: config.AUTH_FAILURE_MAX, timeWindow: config.AUTH_FAILURE_WINDOW } : false,
    openapi: SERVICE_OPENAPI_NAMES,
    feed,
    webhooks: webhooksOptions(config, feed)
  }
}

/**
 * The WEBHOOK_* settings (delivered as WEBHOOK_DELIVERY says), with attempts in flight given what is
 * left of SHUTDOWN_TIMEOUT once requests are answered, and with the feed on events kept for the
 * longer of both retentions (a delivery-only instance prunes the events the API instances' feed reads).
 */
function webhooksOptions (config: Config, feed: false | { retention: number }): PlantStoreOptions['webhooks'] {
  const webhooks = readWebhooks(config)
  const retention = feed === false ? webhooks?.retention : Math.max(webhooks?.retention ?? DEFAULT_RETENTION, feed.retention)
  return webhooks && { ...webhooks, drainTimeout: Math.floor(config.SHUTDOWN_TIMEOUT / 2), ...(retention !== undefined && { retention }) }
}

/**
 * Limits that make slow, silent or too many clients let go of the server's sockets. `fdLimit` is
 * the process's open-files limit, which bounds MAX_CONNECTIONS.
 */
export function connectionOptions (config: Config, fdLimit = openFilesLimit()): ServerOptions {
  // Node looks for expired headers and requests every connectionsCheckingInterval (30 s by
  // default): a twentieth of the shorter timeout makes each act within 5 % of its setting.
  const shorter = Math.min(config.HEADERS_TIMEOUT, config.REQUEST_TIMEOUT || Infinity)
  const maxConnections = connectionLimit(config, fdLimit)
  return {
    connectionTimeout: config.CONNECTION_TIMEOUT,
    requestTimeout: config.REQUEST_TIMEOUT,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT,
    maxConnections,
    maxTokenless: tokenlessLimit(config, maxConnections),
    minBodyRate: config.BODY_MIN_RATE,
    bodyRateGrace: config.BODY_RATE_GRACE,
    maxHeadersCount: config.MAX_HEADERS_COUNT,
    http: {
      // Also here: Fastify sets it only after creating the server, which checks headersTimeout
      // against Node's own default (300 s) first, and REQUEST_TIMEOUT=0 would refuse a longer one.
      requestTimeout: config.REQUEST_TIMEOUT,
      headersTimeout: config.HEADERS_TIMEOUT,
      maxHeaderSize: config.MAX_HEADER_SIZE,
      connectionsCheckingInterval: Math.max(1, Math.floor(shorter / 20))
    }
  }
}

/** What the log may show: tokens never, whether sent in a header or anywhere in a URL past its plain path. */
export function loggerOptions (level: string) {
  return {
    level,
    // Nothing of ours logs headers; should anything ever log some, their Authorization is hidden.
    redact: ['headers.authorization', '*.headers.authorization'],
    serializers: {
      req: (request: Partial<FastifyRequest>) => ({
        method: request.method, url: request.url === undefined ? undefined : pathOf(request.url), remoteAddress: request.ip
      })
    }
  }
}
