import { Type } from 'typebox'

/** The samplers of OTEL_TRACES_SAMPLER the service knows (OpenTelemetry's standard ones). */
export const OTEL_SAMPLERS = [
  'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'
] as const

/**
 * The OTLP protocols, each sent by the OpenTelemetry project's own exporter: protobuf or JSON over
 * HTTP (collectors listen on 4318), or gRPC (4317). http/protobuf is the specification's default.
 */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const
export type OtlpProtocol = typeof OTLP_PROTOCOLS[number]
export const DEFAULT_OTLP_PROTOCOL: OtlpProtocol = 'http/protobuf'

const endpoint = (description: string) => Type.Optional(Type.String({ format: 'uri', pattern: '^https?://', description }))
const protocol = (description: string) => Type.Optional(Type.Enum(OTLP_PROTOCOLS, { description }))

/**
 * The OpenTelemetry variables the service decides on, part of the one config schema. The others the
 * SDK reads itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES, ...); see the README.
 */
export const TracingSettings = {
  OTEL_SDK_DISABLED: Type.Optional(Type.Enum(['true', 'false'], { description: 'true or false: true turns tracing off, whatever else is set' })),
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Enum(['otlp', 'none'], {
    description: 'otlp (traces sent over OTLP, to the default endpoint of the protocol unless an endpoint is set) or none'
  })),
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint('the http(s) URL of an OTLP collector, such as http://127.0.0.1:4318 (over HTTP, traces go to its /v1/traces; ' +
    'gRPC: http://127.0.0.1:4317); it turns tracing on'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint('the http(s) URL traces are sent to, such as http://127.0.0.1:4318/v1/traces (gRPC: http://127.0.0.1:4317); ' +
    'it turns tracing on'),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol(`the OTLP protocol: ${OTLP_PROTOCOLS.join(', ')} (default ${DEFAULT_OTLP_PROTOCOL})`),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol(`the OTLP protocol of traces, over OTEL_EXPORTER_OTLP_PROTOCOL: ${OTLP_PROTOCOLS.join(', ')}`),
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

/** The protocol traces are sent with: the traces' own setting, else the general one, else the default. */
export function otlpProtocol (config: TracingConfig): OtlpProtocol {
  return (config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL ?? DEFAULT_OTLP_PROTOCOL) as OtlpProtocol
}

/**
 * Where the exporter sends traces, as the OTLP exporter specification derives it (for the start-up
 * line): the traces' own URL as it is; else the general one, with /v1/traces over HTTP; else the
 * protocol's default. Only scheme, host, port and path: never credentials or a query.
 */
export function otlpEndpoint (config: TracingConfig, protocol = otlpProtocol(config)): string {
  const own = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  const base = config.OTEL_EXPORTER_OTLP_ENDPOINT ?? (protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318')
  const url = new URL(String(own ?? base))
  if (own === undefined && protocol !== 'grpc') url.pathname = `${url.pathname.replace(/\/$/, '')}/v1/traces`
  return `${url.protocol}//${url.host}${protocol === 'grpc' && url.pathname === '/' ? '' : url.pathname}`
}
