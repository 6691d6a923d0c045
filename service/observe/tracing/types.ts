import type { FastifyPluginCallback } from 'fastify'
import type { PlantStore, WebhookTracing } from '../../../src/service-api.js'

/** What the service traces with, when tracing is on (made by sdk.ts, loaded by index.ts). */
export interface Tracing {
  /** @fastify/otel's plugin: registered before any route, it gives each request its span. */
  plugin: FastifyPluginCallback
  /** The store, each operation in a span of its own. */
  wrapStore (store: PlantStore): PlantStore
  webhooks: WebhookTracing
  /** Sends the spans still batched, and stops. */
  shutdown (): Promise<void>
}
