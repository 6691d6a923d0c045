import { existsSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { Clock } from '../../http/clock.js'
import type { AttemptOutcome } from '../../store/outbox.js'
import type { ThreadLimits } from '../options-schema.js'
import { DEFAULT_THREAD_LIMITS } from '../settings.js'
import { newBell, ring } from './doorbell.js'
import type { DeliveryThreadData, FromThread, ThreadData, ToThread } from './messages.js'

export interface ThreadLog {
  warn (object: object, message: string): void
  info (object: object, message: string): void
  error (object: object, message: string): void
}

/** What the plugin runs, on the event loop (DeliveryWorker) or in a thread (DeliveryThread). */
export interface Delivery {
  /** Starts delivering; a thread's start resolves once the thread is up (or has not come up within a few seconds). */
  start (): void | Promise<void>
  /** Told after each commit that wrote events. */
  wake (): void
  /** Stops claiming. */
  pause (): void
  /** Lets attempts in flight finish within `drainMs`, hands the rest back, and stops. */
  stop (drainMs: number): Promise<void>
}

/** Why a delivery thread ended without being asked to: its heap full (ERR_WORKER_OUT_OF_MEMORY), an error thrown, or an exit. */
export type ThreadEnd = 'out_of_memory' | 'error' | 'exit'

export interface DeliveryThreadOptions {
  data: DeliveryThreadData
  log: ThreadLog
  /** The restarts' waits, the wait for the thread to be up and the stop's margin, and how long a thread ran (systemClock but in tests). */
  clock: Clock
  onAttempt: (endpoint: string, outcome: AttemptOutcome, seconds: number) => void
  /** Told instead of `onAttempt`, when given: the attempts of one endpoint and outcome in a message, at once. */
  onAttempts?: (endpoint: string, outcome: AttemptOutcome, seconds: Float64Array) => void
  /** Told of each end of the thread that it is started again after, and why (for the metrics). */
  onRestart?: ((reason: ThreadEnd) => void) | undefined
  /** The thread's module (tests start others). */
  entry?: URL
  /** The wait before the first restart, doubled at each restart up to `restartMaxMs`. */
  restartMs?: number
  /** The longest wait; a thread that ran this long is restarted after `restartMs` again. */
  restartMaxMs?: number
  /** Beyond drainMs, the time the thread gets to write its results and close its store before it is ended. */
  stopMarginMs?: number
  /** How long start() waits for the thread to be up before it resolves all the same. */
  upWithinMs?: number
}

const RESTART_MS = 500
const RESTART_MAX_MS = 30_000
const STOP_MARGIN_MS = 2000
// A thread is up in well under a second from the bundle; from TypeScript source on a busy machine
// it can take longer, and the app then starts without it (its deliveries wait in the outbox).
const UP_WITHIN_MS = 5000

const OUT_OF_MEMORY = 'ERR_WORKER_OUT_OF_MEMORY'
const endOf = (failure: Error | undefined): ThreadEnd =>
  failure === undefined ? 'exit' : (failure as { code?: string }).code === OUT_OF_MEMORY ? 'out_of_memory' : 'error'

/**
 * A thread's module, started by file name: `beside` the module `here` when compiled (.js) or run
 * from source (.ts), in its extension; the bundled server (dist/server.mjs and its chunks) has it
 * as dist/<bundled>.mjs.
 */
export function threadModule (here: string, beside: (extension: string) => URL, bundled: string): URL {
  const extension = /\.[cm]?[jt]s$/.exec(new URL(here).pathname)![0]
  const candidates = [beside(extension), new URL(`./${bundled}.mjs`, here), new URL(`../${bundled}.mjs`, here)]
  return candidates.find((candidate) => existsSync(candidate)) ?? candidates[0]
}

/** The delivery thread's module (thread-entry.ts; dist/webhook-delivery.mjs in the bundle). */
export const deliveryEntry = (here = import.meta.url): URL =>
  // Written out whole: the package's module check (scripts/test-host.mjs) follows it.
  threadModule(here, (extension) => new URL(`./thread-entry${extension}`, here), 'webhook-delivery')

/**
 * Runs delivery in a worker_threads worker of this process, with its own connection to the store
 * and memory limits of its own (DEFAULT_THREAD_LIMITS, settings.ts): the claims, signing, sending,
 * answers and results never hold the event loop that serves HTTP, and a thread that runs out of
 * memory ends alone. A thread that fails or exits is logged, counted and started again, after a
 * wait that doubles each time.
 */
export class DeliveryThread implements Delivery {
  private worker?: Worker | undefined
  private cancelRestart?: (() => void) | undefined
  private restartMs: number
  private startedAt = 0
  private failure?: Error | undefined
  // Rung after each commit that wrote events: shared memory, kept across restarts of the thread.
  private readonly bell = newBell()
  private readonly limits: ThreadLimits
  private stopping = false
  private exited?: Promise<void>
  /** Ends the first start's wait for the thread to be up. */
  private up?: (() => void) | undefined

  constructor (private readonly options: DeliveryThreadOptions) {
    this.restartMs = options.restartMs ?? RESTART_MS
    this.limits = { ...DEFAULT_THREAD_LIMITS, ...options.data.webhooks.threadResourceLimits }
  }

  /** Starts the thread; resolves once it is up, or after upWithinMs with a warning (it delivers once it is up). */
  start (): Promise<void> {
    this.launch()
    const { clock, log, upWithinMs = UP_WITHIN_MS } = this.options
    return new Promise((resolve) => {
      const cancel = clock.schedule(() => {
        log.warn({ upWithinMs }, `webhooks: the delivery thread is not up after ${upWithinMs} ms; starting without it (what is due is delivered once it is up)`)
        this.up?.()
      }, upWithinMs)
      this.up = () => {
        this.up = undefined
        cancel()
        resolve()
      }
    })
  }

  private launch (): void {
    const workerData: ThreadData = { ...this.options.data, bell: this.bell }
    const worker = this.worker = new Worker(this.options.entry ?? deliveryEntry(), { workerData, resourceLimits: this.limits })
    // The thread never holds the process open: stop() holds it while the thread drains.
    worker.unref()
    this.startedAt = this.options.clock.now()
    this.failure = undefined
    worker.on('message', (message: FromThread) => this.receive(message))
    worker.on('error', (error) => { this.failure = error })
    this.exited = new Promise((resolve) => worker.once('exit', (code) => {
      this.worker = undefined
      resolve()
      if (!this.stopping) this.restartAfter(code)
    }))
  }

  private restartAfter (code: number): void {
    const { restartMs = RESTART_MS, restartMaxMs = RESTART_MAX_MS, clock, log } = this.options
    if (clock.now() - this.startedAt >= restartMaxMs) this.restartMs = restartMs
    const wait = this.restartMs
    this.restartMs = Math.min(2 * wait, restartMaxMs)
    const reason = endOf(this.failure)
    const fields = { err: this.failure, exitCode: code, reason, restartInMs: wait }
    if (reason === 'out_of_memory') {
      log.error({ ...fields, limits: this.limits }, `webhooks: the delivery thread ran out of memory (${OUT_OF_MEMORY}: its heap reached ` +
        `${this.limits.maxOldGenerationSizeMb} MB, webhooks.threadResourceLimits); starting it again (deliveries wait in the outbox meanwhile)`)
    } else {
      log.error(fields, 'webhooks: the delivery thread stopped; starting it again (deliveries wait in the outbox meanwhile)')
    }
    this.options.onRestart?.(reason)
    this.cancelRestart = clock.schedule(() => this.launch(), wait)
  }

  private receive (message: FromThread): void {
    if (message.kind === 'up') return this.up?.()
    if (message.kind === 'log') return this.options.log[message.level](message.object, message.message)
    const { onAttempt, onAttempts } = this.options
    for (const [endpoint, outcome, seconds] of message.attempts) {
      if (onAttempts) onAttempts(endpoint, outcome, seconds)
      else for (const each of seconds) onAttempt(endpoint, outcome, each)
    }
  }

  private post (message: ToThread): void {
    this.worker?.postMessage(message)
  }

  /** Tells the thread of a commit: an atomic add, and a notification only when the thread waits for one (doorbell.ts). */
  wake (): void {
    ring(this.bell)
  }

  pause (): void {
    this.post({ kind: 'pause' })
  }

  async stop (drainMs: number): Promise<void> {
    this.stopping = true
    this.up?.()
    this.cancelRestart?.()
    const worker = this.worker
    if (worker === undefined) return
    // Held open while the thread drains: the clock's timers hold nothing.
    worker.ref()
    this.post({ kind: 'stop', drainMs })
    const cancelEnd = this.options.clock.schedule(() => { worker.terminate().then(() => {}, () => {}) }, drainMs + (this.options.stopMarginMs ?? STOP_MARGIN_MS))
    await this.exited
    cancelEnd()
  }
}
