import type { NewPlant, Plant } from '../../schemas/index.js'

/** How a write waiting for its batch's commit is answered. */
export interface Settles<R> {
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

/** A create waiting for its batch's commit. */
export interface PendingCreate extends Settles<Plant> {
  plant: NewPlant
  /** The caller's trace context, for its event (OutboxOptions.traceContext). */
  traceContext: string | undefined
}

/**
 * Group commit, for the durable stores: the writes that arrive together (in one turn of the event
 * loop) are handed to `commitBatch` as one batch, in the order they came, so that one transaction,
 * one fsync or WAL flush, acknowledges them all. `commitBatch` settles every write of its batch and
 * never rejects.
 */
export class GroupCommit<P extends Settles<never>> {
  #pending: P[] = []
  // Batches still committing (waiting for another process's lock), for close to wait for.
  readonly #committing = new Set<Promise<void>>()
  readonly #commitBatch: (batch: P[]) => Promise<void>

  constructor (commitBatch: (batch: P[]) => Promise<void>) {
    this.#commitBatch = commitBatch
  }

  /** Queues the write that `pending` makes of its settle functions; resolves or rejects as its batch settles it. */
  add<R> (pending: (settles: Settles<R>) => P): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => this.flush())
      this.#pending.push(pending({ resolve, reject }))
    })
  }

  /** Hands what is pending to a commit now. */
  flush (): void {
    if (this.#pending.length === 0) return // committed by close already
    const batch = this.#pending
    this.#pending = []
    const done: Promise<void> = this.#commitBatch(batch).finally(() => this.#committing.delete(done))
    this.#committing.add(done)
  }

  /** Commits what is pending, and resolves once every batch has committed. */
  async drain (): Promise<void> {
    this.flush()
    await Promise.all(this.#committing)
  }
}
