import { workerData } from 'node:worker_threads'
import { runDeliveryThread, type DeliveryThreadData } from '../../src/service-api.js'
import { tracerProvider, TRACER_NAME, type ProviderSettings } from '../observe/tracing/provider.js'
import { webhookTracing } from '../observe/tracing/webhooks.js'

// The delivery thread's module when tracing is on (sdk.ts names it): the thread's own tracer
// provider makes each attempt's span here, linked to the create's trace stored with its event, and
// sends its batches itself; its last batch once the thread's last attempt has ended.
const { provider, shutdown } = await tracerProvider((workerData as DeliveryThreadData).tracing as ProviderSettings)
await runDeliveryThread({ tracing: webhookTracing(provider.getTracer(TRACER_NAME)), shutdown: async () => { await shutdown() } })
