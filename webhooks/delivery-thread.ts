import { runDeliveryThread } from './delivery-thread-run.js'

// The delivery thread's module (thread-host.ts starts it by file name): delivery without tracing.
await runDeliveryThread()
