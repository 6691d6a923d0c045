import type { NewPlant, Plant } from '../../schemas/index.js'

/** A create waiting for its batch's commit. */
export interface PendingCreate {
  plant: NewPlant
  /** The caller's trace context, for its event (OutboxOptions.traceContext). */
  traceContext: string | undefined
  resolve: (plant: Plant) => void
  reject: (error: unknown) => void
}

/**
 * Group commit, for the durable stores: the creates that arrive together (in one turn of the
 * event loop) are handed to `commitBatch` as one batch, so that one transaction, one fsync or WAL
 * flush, acknowledges them all. `commitBatch` settles every create of its batch and never rejects.
 */
export class GroupCommit {
  #pending: PendingCreate[] = []
  // Batches still committing (waiting for another process's lock), for close to wait for.
  readonly #committing = new Set<Promise<void>>()
  readonly #commitBatch: (batch: PendingCreate[]) => Promise<void>

  constructor (commitBatch: (batch: PendingCreate[]) => Promise<void>) {
    this.#commitBatch = commitBatch
  }

  create (plant: NewPlant, traceContext?: string): Promise<Plant> {
    return new Promise<Plant>((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => this.flush())
      this.#pending.push({ plant, traceContext, resolve, reject })
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
