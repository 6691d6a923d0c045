import { propagation } from '@opentelemetry/api'
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type ReadableSpan, type Sampler,
  type SpanExporter
} from '@opentelemetry/sdk-trace'
import type { OTEL_SAMPLERS, OtlpProtocol } from './settings.js'

const SERVICE_NAME = 'plant-store'
export const TRACER_NAME = 'plant-store'

/**
 * How long the spans still batched at shutdown may take to reach the collector: past it they are
 * dropped, so that a collector that is down, silent or slow cannot stretch the shutdown (the
 * exporter itself would wait up to OTEL_EXPORTER_OTLP_TIMEOUT, 10 s, and retry).
 */
export const EXPORT_AT_CLOSE_MS = 1500

/** The service's own tracing settings, as plain data: the delivery thread makes its provider from them too. */
export interface ProviderSettings {
  sampler: typeof OTEL_SAMPLERS[number]
  ratio: number
  protocol: OtlpProtocol
}

/** OTEL_TRACES_SAMPLER and its argument, as OpenTelemetry's SDK configuration defines them. */
export function samplerOf (name: typeof OTEL_SAMPLERS[number], ratio: number): Sampler {
  const root = { always_on: new AlwaysOnSampler(), always_off: new AlwaysOffSampler(), traceidratio: new TraceIdRatioBasedSampler(ratio) }
  const kind = name.replace(/^parentbased_/, '') as keyof typeof root
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root: root[kind] }) : root[kind]
}

// Exports in flight at once, each a batch (the batch processor's, 512 spans): with the queue,
// what a collector that never answers can make the service hold.
const EXPORTS_IN_FLIGHT = 4

/**
 * The OpenTelemetry project's exporter for the protocol; each reads OTEL_EXPORTER_OTLP_* (endpoint,
 * headers, timeout, compression) itself. Only the one in use is loaded.
 */
async function exporterFor (protocol: OtlpProtocol): Promise<SpanExporter> {
  const options = { concurrencyLimit: EXPORTS_IN_FLIGHT }
  if (protocol === 'grpc') return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter(options)
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options)
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options)
}

/** An exporter that counts the spans the collector did not take (refused, unreachable, timed out). */
class CountingExporter implements SpanExporter {
  unsent = 0
  constructor (private readonly exporter: SpanExporter) {}

  export (spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.exporter.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) this.unsent += spans.length
      done(result)
    })
  }

  shutdown (): Promise<void> {
    return this.exporter.shutdown()
  }
}

/** A thread's tracer provider, and its shutdown bounded in time. */
export interface Provider {
  provider: TracerProvider
  /**
   * Sends what is batched for at most `withinMs` (EXPORT_AT_CLOSE_MS), then stops: 'sent', or
   * 'dropped' when spans could not be sent, at close or before.
   */
  shutdown (withinMs?: number): Promise<'sent' | 'dropped'>
}

/**
 * A tracer provider exporting batches over OTLP, and W3C trace context as this thread's propagator.
 * One per thread: the API's and the delivery thread's each export their own spans. The batch
 * processor keeps at most 2048 spans waiting while the collector is away (its default queue),
 * dropping the rest, and EXPORTS_IN_FLIGHT batches are sent at once: whatever a collector does, the
 * spans held cost bounded memory.
 */
export async function tracerProvider ({ sampler, ratio, protocol }: ProviderSettings): Promise<Provider> {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  const exporter = new CountingExporter(await exporterFor(protocol))
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the default name.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': SERVICE_NAME })).merge(detectResources({ detectors: [envDetector] })),
    sampler: samplerOf(sampler, ratio),
    spanProcessors: [new BatchSpanProcessor({ exporter })]
  })
  return {
    provider,
    async shutdown (withinMs = EXPORT_AT_CLOSE_MS) {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), withinMs).unref() })
      try {
        const ended = await Promise.race([provider.shutdown().then(() => true, () => false), late])
        return ended && exporter.unsent === 0 ? 'sent' : 'dropped'
      } finally {
        clearTimeout(timer)
      }
    }
  }
}
