import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { threadModule } from '../../../src/service-api.js'
import type { Config } from '../../config/index.js'
import { pathOf } from '../request-log.js'
import { tracerProvider, TRACER_NAME, type ProviderSettings } from './provider.js'
import { otlpEndpoint, otlpProtocol } from './settings.js'
import { tracedStore } from './store.js'
import type { Tracing } from './types.js'
import { webhookTracing } from './webhooks.js'

export { samplerOf } from './provider.js'

/**
 * Sets up tracing (loaded only when it is on): a tracer provider exporting batches over OTLP, in the
 * protocol OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names (provider.ts), W3C trace context, and what the service traces: its requests (@fastify/otel, one
 * span per request named by its route), its store, its webhook deliveries (their spans made in the
 * delivery thread, which starts from service/entry-points/traced-delivery-thread.ts with these settings). `system`: the store's
 * database system (sqlite, postgresql, memory).
 */
export async function startTracing (config: Config, system: string): Promise<Tracing> {
  const protocol = otlpProtocol(config)
  const settings: ProviderSettings = { sampler: config.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on', ratio: config.OTEL_TRACES_SAMPLER_ARG ?? 1, protocol }
  const { provider, shutdown } = await tracerProvider(settings)
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  const requests = new FastifyOtelInstrumentation({
    // A span per request and one for its handler; a span for every hook would cost more than it tells.
    instrumentHooks: false,
    requestHook (span, request) {
      // As OpenTelemetry's HTTP conventions name it: the method alone when no route matched.
      const route = request.routeOptions.url
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
      // Of the URL, only its plain path: a query may hold a token (as in the log, service/observe/request-log.ts).
      span.setAttribute('url.path', pathOf(request.url))
    }
  })
  requests.setTracerProvider(provider)
  const tracer = provider.getTracer(TRACER_NAME)
  return {
    plugin: requests.plugin(),
    wrapStore: (store) => tracedStore(store, tracer, system),
    webhooks: { ...webhookTracing(tracer), thread: { entry: threadModule(import.meta.url, (extension) => new URL(`../../entry-points/traced-delivery-thread${extension}`, import.meta.url), 'webhook-delivery-traced'), data: settings } },
    target: { protocol, endpoint: otlpEndpoint(config, protocol) },
    // Sends what is batched still, within a bound: called last at shutdown, once the webhook attempts have ended.
    shutdown: () => shutdown()
  }
}
