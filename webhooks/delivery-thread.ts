import { parentPort, threadId, workerData } from 'node:worker_threads'
import { loadDriver, openStore, type PlantStore } from '../stores/index.js'
import type { AttemptOutcome, OutboxStore } from '../stores/outbox.js'
import { resolveWebhooks } from './config.js'
import type { DeliveryThreadData, FromThread, LogLevel, ToThread } from './thread-messages.js'
import { outboxOptions } from './wiring.js'
import { DeliveryWorker } from './worker.js'

/**
 * The delivery thread (a worker_threads worker started by DeliveryThread, thread-host.ts): its own
 * connection to the store, the delivery worker, its undici pools. Nothing of it runs on the event
 * loop that answers HTTP requests; that loop is told of each attempt (for /metrics) and of each
 * log line, and wakes this one after each commit that wrote events.
 */

// Claims, result batches, endpoint checks and pruning: a few queries at once at most.
const POOL_SIZE = 3
// Attempts are told to the API thread in batches: one message per this period at most.
const ATTEMPTS_EVERY_MS = 50

const port = parentPort!
const data = workerData as DeliveryThreadData
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
const teller = setInterval(tellAttempts, ATTEMPTS_EVERY_MS).unref()

const config = resolveWebhooks(data.webhooks)
// The store's own lines (a file moved, a table unusable) are messages without an object.
const storeLog = { warn: log.warn.bind(undefined, {}), info: log.info.bind(undefined, {}) }
const store: PlantStore & OutboxStore = data.store.startsWith('sqlite:')
  ? (await loadDriver('better-sqlite3', () => import('../stores/sqlite/store.js'))).openSqliteStore(data.store.slice('sqlite:'.length), { log: storeLog, bookkeeping: true })
  : await openStore(data.store, { ...data.postgres, poolSize: POOL_SIZE, log: storeLog }) as PlantStore & OutboxStore
const outbox = await store.openOutbox(outboxOptions(config))
const worker = new DeliveryWorker({ outbox, config, log, onAttempt })

port.on('message', async (message: ToThread) => {
  if (message.kind === 'wake') return worker.wake()
  if (message.kind === 'pause') return worker.pause()
  await worker.stop(message.drainMs)
  clearInterval(teller)
  tellAttempts()
  await store.close()
  process.exit(0)
})
worker.start()
log.info({ threadId }, 'webhooks: delivering in a thread of its own')
