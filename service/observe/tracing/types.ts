import type { FastifyPluginCallback } from 'fastify'
import type { PlantStore, WebhookTracing } from '../../../src/service-api.js'

/** What the service traces with, when tracing is on (made by sdk.ts, loaded by index.ts). */
export interface Tracing {
  /** @fastify/otel's plugin: registered before any route, it gives each request its span. */
  plugin: FastifyPluginCallback
  /** The store, each operation in a span of its own. */
  wrapStore (store: PlantStore): PlantStore
  webhooks: WebhookTracing
  /** Where spans go, for the start-up line: the protocol and the endpoint (never its headers). */
  target: { protocol: string, endpoint: string }
  /** Sends the spans still batched within a bound, and stops: 'dropped' when some could not be sent. */
  shutdown (): Promise<'sent' | 'dropped'>
}
