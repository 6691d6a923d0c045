import { existsSync, rmSync } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import type { FromThread, ThreadData } from '../../plugins/webhooks/thread/messages.js'
import { runDeliveryThread } from '../../plugins/webhooks/thread/thread-side.js'

/** What this module is given (as a tracing's thread data, WebhookTracing.thread): the file that marks its first start. */
export interface OutOfMemoryData { firstStart: string }

/**
 * A delivery thread's module that runs out of memory for real on its first start: while the file
 * `firstStart` is there, it removes it, says it is up (as a thread that has run for a while would
 * be), and fills its heap with many small objects, as a leak does, until the engine ends it at its
 * limit (ERR_WORKER_OUT_OF_MEMORY). Started again, it runs the real delivery thread.
 */
const { firstStart } = (workerData as ThreadData).tracing as OutOfMemoryData
if (existsSync(firstStart)) {
  rmSync(firstStart)
  const post = (message: FromThread) => parentPort!.postMessage(message)
  post({ kind: 'up' })
  post({ kind: 'log', level: 'info', object: {}, message: 'out-of-memory stand-in: filling its heap' })
  const kept: object[] = []
  for (let i = 0; ; i++) kept.push({ i, name: `plant ${i}` })
}
await runDeliveryThread()
