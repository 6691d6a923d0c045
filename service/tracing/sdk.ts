import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler
} from '@opentelemetry/sdk-trace'
import type { Config } from '../config.js'
import { pathOf } from '../request-log.js'
import type { OTEL_SAMPLERS } from './settings.js'
import { tracedStore } from './store.js'
import type { Tracing } from './index.js'
import { webhookTracing } from './webhooks.js'

const SERVICE_NAME = 'plant-store'
const TRACER_NAME = 'plant-store'

/** OTEL_TRACES_SAMPLER and its argument, as OpenTelemetry's SDK configuration defines them. */
export function samplerOf (name: typeof OTEL_SAMPLERS[number], ratio: number): Sampler {
  const root = { always_on: new AlwaysOnSampler(), always_off: new AlwaysOffSampler(), traceidratio: new TraceIdRatioBasedSampler(ratio) }
  const kind = name.replace(/^parentbased_/, '') as keyof typeof root
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root: root[kind] }) : root[kind]
}

/**
 * Sets up tracing (loaded only when it is on): a tracer provider exporting batches over OTLP/HTTP
 * (the exporter reads OTEL_EXPORTER_OTLP_* itself), W3C trace context, and what the service
 * traces: its requests (@fastify/otel, one span per request named by its route), its store, its
 * webhook deliveries. `system`: the store's database system (sqlite, postgresql, memory).
 */
export function startTracing (config: Config, system: string): Tracing {
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the default name.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': SERVICE_NAME })).merge(detectResources({ detectors: [envDetector] })),
    sampler: samplerOf(config.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on', config.OTEL_TRACES_SAMPLER_ARG ?? 1),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })]
  })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  trace.setGlobalTracerProvider(provider)
  const requests = new FastifyOtelInstrumentation({
    // A span per request and one for its handler; a span for every hook would cost more than it tells.
    instrumentHooks: false,
    requestHook (span, request) {
      // As OpenTelemetry's HTTP conventions name it: the method alone when no route matched.
      const route = request.routeOptions.url
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
      // Of the URL, only its plain path: a query may hold a token (as in the log, service/request-log.ts).
      span.setAttribute('url.path', pathOf(request.url))
    }
  })
  requests.setTracerProvider(provider)
  const tracer = provider.getTracer(TRACER_NAME)
  return {
    plugin: requests.plugin(),
    wrapStore: (store) => tracedStore(store, tracer, system),
    webhooks: webhookTracing(tracer),
    // Sends what is batched still: called last at shutdown, once the webhook attempts have ended.
    shutdown: () => provider.shutdown()
  }
}
