import { propagation } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler
} from '@opentelemetry/sdk-trace'
import type { OTEL_SAMPLERS } from './settings.js'

const SERVICE_NAME = 'plant-store'
export const TRACER_NAME = 'plant-store'

/** The service's own tracing settings, as plain data: the delivery thread makes its provider from them too. */
export interface ProviderSettings {
  sampler: typeof OTEL_SAMPLERS[number]
  ratio: number
}

/** OTEL_TRACES_SAMPLER and its argument, as OpenTelemetry's SDK configuration defines them. */
export function samplerOf (name: typeof OTEL_SAMPLERS[number], ratio: number): Sampler {
  const root = { always_on: new AlwaysOnSampler(), always_off: new AlwaysOffSampler(), traceidratio: new TraceIdRatioBasedSampler(ratio) }
  const kind = name.replace(/^parentbased_/, '') as keyof typeof root
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root: root[kind] }) : root[kind]
}

/**
 * A tracer provider exporting batches over OTLP/HTTP (the exporter reads OTEL_EXPORTER_OTLP_*
 * itself), and W3C trace context as this thread's propagator. One per thread: the API's and the
 * delivery thread's each export their own spans.
 */
export function tracerProvider ({ sampler, ratio }: ProviderSettings): TracerProvider {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  return new TracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the default name.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': SERVICE_NAME })).merge(detectResources({ detectors: [envDetector] })),
    sampler: samplerOf(sampler, ratio),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })]
  })
}
