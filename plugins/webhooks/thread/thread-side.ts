import { constants, getPriority, setPriority } from 'node:os'
import { parentPort, threadId, workerData } from 'node:worker_threads'
import { every, systemClock } from '../../http/clock.js'
import type { AttemptOutcome } from '../../store/outbox.js'
import { resolveWebhooks } from '../settings.js'
import { listen } from './doorbell.js'
import type { FromThread, LogLevel, ThreadData, ToThread } from './messages.js'
import { openThreadStore } from './thread-store.js'
import type { WebhookTracing } from '../delivery/tracing.js'
import { outboxOptions } from '../events.js'
import { DeliveryWorker } from '../delivery/worker.js'

// Attempts are told to the API thread in batches: one message per this period at most.
const ATTEMPTS_EVERY_MS = 50
// After a wake-up, the commits of this long are claimed together: under load, one claim per period.
const WAKE_GAP_MS = 5
// How far below the thread that serves HTTP the thread's scheduling priority is (its nice value, 10
// more): on a busy core the API's requests go first, and delivery takes the time they leave (about
// a tenth of the core at the least, when both want it all).
const BELOW_API = constants.priority.PRIORITY_BELOW_NORMAL

/** Tracing made in the thread itself (service/entry-points/traced-delivery-thread.ts): the attempts' spans, and its end. */
export interface ThreadTracing {
  tracing: WebhookTracing
  /** Sends the spans still batched; called once the last attempt has ended. */
  shutdown: () => Promise<void>
}

/**
 * The delivery thread (a worker_threads worker started by DeliveryThread, host-side.ts): its own
 * connection to the store, the delivery worker, its undici pools. Nothing of it runs on the event
 * loop that answers HTTP requests; that loop is told of each attempt (for /metrics) and of each
 * log line, and wakes this one after each commit that wrote events (doorbell.ts). With tracing,
 * each attempt's span is made here.
 */
export async function runDeliveryThread (traced?: ThreadTracing): Promise<void> {
  const port = parentPort!
  const data = workerData as ThreadData
  // On Linux a nice value is a thread's own: pid 0 is this thread, the process's others keep theirs.
  // Raising it is always allowed; 19 is the lowest priority there is.
  setPriority(Math.min(getPriority() + BELOW_API, constants.priority.PRIORITY_LOW))
  const post = (message: FromThread) => port.postMessage(message)

  // Errors in a line cross as errors (name, message, stack), as any log object is copied.
  const line = (level: LogLevel) => (object: object, message: string) => post({ kind: 'log', level, object, message })
  const log = { warn: line('warn'), info: line('info') }

  // The durations of the attempts not yet told, by endpoint and outcome.
  let attempts = new Map<string, { endpoint: string, outcome: AttemptOutcome, seconds: number[] }>()
  const onAttempt = (endpoint: string, outcome: AttemptOutcome, seconds: number) => {
    const key = `${outcome} ${endpoint}`
    let group = attempts.get(key)
    if (group === undefined) attempts.set(key, group = { endpoint, outcome, seconds: [] })
    group.seconds.push(seconds)
  }
  const tellAttempts = () => {
    if (attempts.size > 0) {
      post({ kind: 'attempts', attempts: [...attempts.values()].map(({ endpoint, outcome, seconds }) => [endpoint, outcome, Float64Array.from(seconds)]) })
    }
    attempts = new Map()
  }
  const stopTelling = every(systemClock, ATTEMPTS_EVERY_MS, tellAttempts)

  const config = resolveWebhooks(data.webhooks)
  // The store's own lines (a file moved, a table unusable) are messages without an object.
  const storeLog = { warn: log.warn.bind(undefined, {}), info: log.info.bind(undefined, {}) }
  const store = await openThreadStore(data, storeLog)
  const outbox = await store.openOutbox(outboxOptions(config))
  const worker = new DeliveryWorker({ outbox, config, log, clock: systemClock, onAttempt, tracing: traced?.tracing })

  const bell = listen(data.bell, () => worker.wake(), WAKE_GAP_MS, systemClock)

  port.on('message', async (message: ToThread) => {
    bell.stop()
    if (message.kind === 'pause') return worker.pause()
    await worker.stop(message.drainMs)
    stopTelling()
    tellAttempts()
    await store.close()
    await traced?.shutdown()
    process.exit(0)
  })
  worker.start()
  log.info({ threadId }, 'webhooks: delivering in a thread of its own')
  // The API thread's ready() waits for this (host-side.ts): the first event leaves as fast as later ones.
  post({ kind: 'up' })
}
