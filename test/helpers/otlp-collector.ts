import { once } from 'node:events'
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js'
import protobuf from 'protobufjs'

/**
 * OTLP collectors that decode what they receive with code of their own, not the exporter's: the
 * trace request messages of opentelemetry-proto (collector/trace/v1, trace/v1, common/v1,
 * resource/v1), the fields the tests read, decoded by protobufjs; JSON as OTLP/HTTP JSON encodes them.
 */
const OTLP = protobuf.Root.fromJSON({
  nested: {
    AnyValue: { oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue'] } }, fields: { stringValue: { type: 'string', id: 1 }, boolValue: { type: 'bool', id: 2 }, intValue: { type: 'int64', id: 3 }, doubleValue: { type: 'double', id: 4 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    Link: { fields: { traceId: { type: 'bytes', id: 1 }, spanId: { type: 'bytes', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
        links: { rule: 'repeated', type: 'Link', id: 13 }
      }
    },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } }
  }
})
const ExportRequest = OTLP.lookupType('ExportTraceServiceRequest')

/** A span as the tests read it, whatever the encoding: ids in hex, attributes by key. */
export interface CollectedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  attributes: Record<string, string | number | boolean>
  links: Array<{ traceId: string, spanId: string }>
}
export interface CollectedResource { attributes: Record<string, string | number | boolean>, spans: CollectedSpan[] }

interface RawValue { stringValue?: string, boolValue?: boolean, intValue?: string | number, doubleValue?: number }
interface RawSpan { traceId?: string, spanId?: string, parentSpanId?: string, name: string, kind: number, attributes?: Array<{ key: string, value: RawValue }>, links?: Array<{ traceId: string, spanId: string }> }
interface RawExport { resourceSpans?: Array<{ resource?: { attributes?: Array<{ key: string, value: RawValue }> }, scopeSpans?: Array<{ spans?: RawSpan[] }> }> }

const valueOf = ({ stringValue, boolValue, intValue, doubleValue }: RawValue) =>
  stringValue ?? boolValue ?? (intValue === undefined ? doubleValue! : Number(intValue))
const attributesOf = (list: Array<{ key: string, value: RawValue }> = []) => Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]))

function resourcesOf (raw: RawExport): CollectedResource[] {
  return (raw.resourceSpans ?? []).map(({ resource, scopeSpans }) => ({
    attributes: attributesOf(resource?.attributes),
    spans: (scopeSpans ?? []).flatMap(({ spans }) => spans ?? []).map((span) => ({
      traceId: span.traceId ?? '',
      spanId: span.spanId ?? '',
      parentSpanId: span.parentSpanId ?? '',
      name: span.name,
      kind: span.kind,
      attributes: attributesOf(span.attributes),
      links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId }))
    }))
  }))
}

/** A binary OTLP request, decoded: ids as hex, as OTLP/JSON writes them. */
export function decodeProtobuf (body: Uint8Array): CollectedResource[] {
  // protobufjs gives bytes as base64; OTLP/JSON writes ids in hex.
  const hex = (base64: string) => Buffer.from(base64, 'base64').toString('hex')
  const raw = ExportRequest.toObject(ExportRequest.decode(body), { longs: String, bytes: String }) as RawExport
  for (const span of (raw.resourceSpans ?? []).flatMap(({ scopeSpans }) => (scopeSpans ?? []).flatMap(({ spans }) => spans ?? []))) {
    for (const key of ['traceId', 'spanId', 'parentSpanId'] as const) if (span[key] !== undefined) span[key] = hex(span[key])
    for (const link of span.links ?? []) Object.assign(link, { traceId: hex(link.traceId), spanId: hex(link.spanId) })
  }
  return resourcesOf(raw)
}

export interface Collector {
  /** What to give the service: OTEL_EXPORTER_OTLP_ENDPOINT (and the protocol). */
  endpoint: string
  /** Each export request received: its path, content type and resources. */
  exports: Array<{ path: string, contentType: string | undefined, resources: CollectedResource[] }>
  spans (): CollectedSpan[]
  resources (): CollectedResource[]
}

const collected = (exports: Collector['exports']) => ({
  resources: () => exports.flatMap(({ resources }) => resources),
  spans: () => exports.flatMap(({ resources }) => resources.flatMap(({ spans }) => spans))
})

/** An OTLP/HTTP collector: protobuf or JSON, by the request's content type; it answers as a collector does. */
export async function httpCollector (t: { teardown (fn: () => unknown): void }): Promise<Collector> {
  const exports: Collector['exports'] = []
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      const contentType = (request.headers as IncomingHttpHeaders)['content-type']
      const json = /^application\/json/.test(contentType ?? '')
      exports.push({ path: request.url!, contentType, resources: json ? resourcesOf(JSON.parse(body.toString('utf8')) as RawExport) : decodeProtobuf(body) })
      response.setHeader('content-type', json ? 'application/json' : 'application/x-protobuf')
      response.end(json ? '{}' : '')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports, ...collected(exports) }
}

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export'

/** An OTLP/gRPC collector (grpc-js), which decodes each Export call's message itself. */
export async function grpcCollector (t: { teardown (fn: () => unknown): void }): Promise<Collector> {
  const exports: Collector['exports'] = []
  const server = new Server()
  server.addService({
    Export: {
      path: EXPORT_PATH,
      requestStream: false,
      responseStream: false,
      requestDeserialize: (bytes: Buffer) => decodeProtobuf(bytes),
      requestSerialize: () => Buffer.alloc(0),
      // An empty ExportTraceServiceResponse.
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: () => ({})
    }
  }, {
    Export: (call: ServerUnaryCall<CollectedResource[], object>, done: sendUnaryData<object>) => {
      exports.push({ path: EXPORT_PATH, contentType: 'application/grpc', resources: call.request })
      done(null, {})
    }
  })
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(),
    (error, bound) => error ? reject(error) : resolve(bound)))
  t.teardown(() => server.forceShutdown())
  return { endpoint: `http://127.0.0.1:${port}`, exports, ...collected(exports) }
}

/**
 * Collectors that misbehave: `blackHole` accepts connections and never answers; `slow` answers each
 * export after `delayMs`; `closedPort` is a port nothing listens on.
 */
export async function blackHole (t: { teardown (fn: () => unknown): void }, answerAfterMs?: number) {
  const sockets = new Set<Socket>()
  let requests = 0
  const answer = (socket: Socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n')
  const server = createTcpServer((socket) => {
    sockets.add(socket)
    socket.on('data', () => {
      requests++
      if (answerAfterMs === undefined) return
      setTimeout(() => answer(socket), answerAfterMs).unref()
    })
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  // At the end, what still waits is answered: a connection cut instead is retried by the exporter,
  // for up to its timeout, on timers that keep the test process alive after its tests.
  t.teardown(() => { for (const socket of sockets) answer(socket); server.close() })
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests }
}

export async function closedPort (): Promise<string> {
  const server = createTcpServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return `http://127.0.0.1:${port}`
}
