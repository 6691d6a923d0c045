import { Type } from 'typebox'

/** The samplers of OTEL_TRACES_SAMPLER the service knows (OpenTelemetry's standard ones). */
export const OTEL_SAMPLERS = [
  'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'
] as const

/** The only encoding the exporter speaks: OTLP/HTTP collectors (port 4318) take it. */
const OTLP_PROTOCOL = 'http/json'

const endpoint = (description: string) => Type.Optional(Type.String({ format: 'uri', pattern: '^https?://', description }))
const protocol = Type.Optional(Type.Enum([OTLP_PROTOCOL], { description: `${OTLP_PROTOCOL}, the only one the service sends` }))

/**
 * The OpenTelemetry variables the service decides on, part of the one config schema. The others the
 * SDK reads itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES, ...); see the README.
 */
export const TracingSettings = {
  OTEL_SDK_DISABLED: Type.Optional(Type.Enum(['true', 'false'], { description: 'true or false: true turns tracing off, whatever else is set' })),
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Enum(['otlp', 'none'], {
    description: 'otlp (traces sent over OTLP/HTTP, to http://localhost:4318 unless an endpoint is set) or none'
  })),
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint('the http(s) URL of an OTLP/HTTP collector, such as http://127.0.0.1:4318 (traces go to its /v1/traces); it turns tracing on'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint('the http(s) URL traces are POSTed to, such as http://127.0.0.1:4318/v1/traces; it turns tracing on'),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1, description: 'the service.name of the traces (default plant-store)' })),
  OTEL_TRACES_SAMPLER: Type.Optional(Type.Enum(OTEL_SAMPLERS, { description: `one of ${OTEL_SAMPLERS.join(', ')} (default parentbased_always_on)` })),
  OTEL_TRACES_SAMPLER_ARG: Type.Optional(Type.Number({
    minimum: 0, maximum: 1, description: 'the share of traces the traceidratio samplers keep, 0 to 1 (default 1)'
  }))
}

type TracingConfig = { [K in keyof typeof TracingSettings]?: string | number | undefined }

/**
 * Whether traces are sent: an OTLP endpoint is set (or OTEL_TRACES_EXPORTER=otlp asks for the
 * default one), and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says no.
 */
export function tracingOn (config: TracingConfig): boolean {
  if (config.OTEL_SDK_DISABLED === 'true' || config.OTEL_TRACES_EXPORTER === 'none') return false
  return config.OTEL_TRACES_EXPORTER === 'otlp' || config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
}
