import type pg from 'pg'
import type { StoreLog } from '../types.js'
import { withClient } from './connection.js'
import type { PostgresFailure } from './failures.js'
import { migrate } from './migration.js'
import { sqlName, type TableName } from './table.js'

// A migration is a few statements, some of which wait for another instance's migration.
const MIGRATION_TIMEOUT_MS = 5000
// While the table is unusable, operations fail at once (503) and the catalog is asked again at most this often.
const RECHECK_MS = 1000

/**
 * The table's state: checked (and made) once, then again whenever an operation finds it changed.
 * While it is unusable, operations fail at once and the catalog is asked again at most every RECHECK_MS.
 */
export class TableCheck {
  #migration: Promise<void> | undefined
  /** Set once the store has started: from then on a table turning unusable is logged. */
  started = false
  /** What was logged of the table last, while it is unusable. */
  unusable: string | undefined

  constructor (readonly pool: pg.Pool, readonly name: TableName, readonly makeSchema: boolean, readonly log: StoreLog) {}

  migrated (): Promise<void> {
    const current: Promise<void> = this.#migration ??= withClient(this.pool, (client) => migrate(client, this.name, this.makeSchema), MIGRATION_TIMEOUT_MS)
      .then(() => {
        if (this.unusable !== undefined) this.log.info(`plant-store: the PostgreSQL table ${sqlName(this.name)} can be used again`)
        this.unusable = undefined
      }, (error) => this.#failed(error as PostgresFailure, current))
    return current
  }

  #failed (failure: PostgresFailure, current: Promise<void>): never {
    if (failure.where !== 'table') {
      this.#migration = undefined
      throw failure
    }
    // One line when the table turns unusable, not one per request; a start-up refusal says it itself.
    const message = (failure.cause as Error).message
    if (this.started && message !== this.unusable) this.log.warn(message)
    this.unusable = message
    // Meanwhile every operation fails at once, without asking the database.
    // c8: whether a recheck replaced this attempt within RECHECK_MS depends on timing alone.
    /* c8 ignore next */
    setTimeout(() => { if (this.#migration === current) this.#migration = undefined }, RECHECK_MS).unref()
    throw failure
  }

  /** Has the table checked again, unless another failure did so already since `used`. */
  recheck (used: Promise<void>) {
    if (this.#migration === used) this.#migration = undefined
    return this.migrated()
  }

  /** A probe looks at the table again at once, rather than repeat an unusable one's verdict. */
  forgetUnusable () {
    if (this.unusable !== undefined) this.#migration = undefined
  }
}
