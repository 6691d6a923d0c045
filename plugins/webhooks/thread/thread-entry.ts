import { runDeliveryThread } from './thread-side.js'

// The delivery thread's module (host-side.ts starts it by file name): delivery without tracing.
await runDeliveryThread()
