import pg from 'pg'
import type { StoreLog } from '../types.js'
import { DEADLINE_AFTER_STATEMENT_MS, ignore, INT8_OID, withClient } from './connection.js'
import { answerFor, PostgresFailure } from './failures.js'
import { migrate } from './migration.js'
import { newerWhileRunning, SchemaWatch } from '../schema-version.js'
import { NewerSchemaFound, SCHEMA_VERSION, versionTable } from './schema-version.js'
import { sqlName, type TableName } from './table.js'
import { TagIndexBuild } from './tag-index.js'

// A migration is a few statements, some of which wait for another instance's migration.
const MIGRATION_TIMEOUT_MS = 5000
// While the table is unusable, operations fail at once (503) and the catalog is asked again at most this often.
const RECHECK_MS = 1000

/** An operation on a pooled connection; `used` is the migration it relied on, for a recheck to replace. */
export type Work<R> = (client: pg.PoolClient, used: Promise<void>) => Promise<R>

export interface CheckedTableOptions {
  /** The table's schema was named in the options: the migration makes it when missing. */
  makeSchema: boolean
  /** The server's statement_timeout: an operation's own deadline comes a little after it. */
  statementTimeout: number
  log: StoreLog
}

/**
 * The store's table, and every operation on it. Its state is checked (and the table made) once,
 * then again whenever an operation finds it changed. While it is unusable, operations fail at once
 * and the catalog is asked again at most every RECHECK_MS.
 */
export class CheckedTable {
  #migration: Promise<void> | undefined
  /** Set once the store has started: from then on a table turning unusable is logged. */
  started = false
  /** What was logged of the table last, while it is unusable. */
  unusable: string | undefined
  /** Whether the version is recorded (the last migration found or made its table): the probe reads it then. */
  versioned = false
  /** Whether the plants table has its revision column (Migrated.revisions), as the last migration found. */
  revisions = false
  readonly #makeSchema: boolean
  readonly #queryTimeout: number
  readonly #log: StoreLog
  readonly #schema: SchemaWatch
  /** Version 4's tag index, where the migration left it to be built after it. */
  readonly tagIndex: TagIndexBuild

  constructor (readonly pool: pg.Pool, readonly name: TableName, { makeSchema, statementTimeout, log }: CheckedTableOptions) {
    this.#makeSchema = makeSchema
    this.#queryTimeout = statementTimeout + DEADLINE_AFTER_STATEMENT_MS
    this.#log = log
    this.#schema = new SchemaWatch(log)
    this.tagIndex = new TagIndexBuild(pool, name, log)
  }

  migrated (): Promise<void> {
    const current: Promise<void> = this.#migration ??= withClient(this.pool, (client) => migrate(client, this.name, this.#makeSchema), MIGRATION_TIMEOUT_MS)
      .then(({ versioned, revisions, tagIndex }) => {
        this.versioned = versioned
        this.revisions = revisions
        // Not awaited: the store serves meanwhile.
        if (revisions && !tagIndex) this.tagIndex.start().catch(ignore)
        if (this.unusable !== undefined) this.#log.info(`plant-store: the PostgreSQL table ${sqlName(this.name)} can be used again`)
        this.unusable = undefined
      }, (error) => this.#failed(error as PostgresFailure, current))
    return current
  }

  #failed (failure: PostgresFailure, current: Promise<void>): never {
    // A newer schema refuses the start; found later, every operation from then on.
    if (failure.where === 'newer' && this.started) throw this.#newer(failure)
    if (failure.where !== 'table' && failure.where !== 'newer') {
      this.#migration = undefined
      throw failure
    }
    // One line when the table turns unusable, not one per request; a start-up refusal says it itself.
    const message = (failure.cause as Error).message
    if (this.started && message !== this.unusable) this.#log.warn(message)
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

  /**
   * Runs `work` once the table is there and usable. After a failure that is not the id's nor an
   * outage's (a column renamed, the primary key dropped, a privilege revoked, the table dropped),
   * the table is checked again: an unusable one makes the failure a `table` one (503), a missing
   * one is made again and the work tried once more. Once more too when the session's prepared
   * statements were not what the driver held (on another connection: withClient closed that one).
   */
  async run<R> (work: Work<R>, again = true): Promise<R> {
    try {
      this.#schema.assertKnown()
    } catch (error) {
      throw new PostgresFailure('newer', error)
    }
    const used = this.migrated()
    await used
    try {
      return await withClient(this.pool, (client) => work(client, used), this.#queryTimeout)
    } catch (error) {
      const { where } = error as PostgresFailure
      if (where === 'newer') throw this.#newer(error as PostgresFailure)
      if (where === 'session' && again) return this.run(work, false)
      if (where !== 'schema' && where !== 'table' && where !== 'refused' && where !== undefined) throw error
      await this.recheck(used)
      if (where === 'schema' && again) return this.run(work, false)
      throw error
    }
  }

  /**
   * A newer schema found while running (the fence refused a write, a probe or a check read its
   * version): told once, and every operation refused from now on, with SchemaNewerError.
   */
  #newer ({ cause }: PostgresFailure): PostgresFailure {
    const version = cause instanceof NewerSchemaFound ? cause.version : Number((cause as pg.DatabaseError).detail)
    return new PostgresFailure('newer', this.#schema.found(newerWhileRunning(`the PostgreSQL table ${versionTable(this.name)}`, version, SCHEMA_VERSION)))
  }

  /** Throws (as a probe does) when `version`, read from the record, is newer than this release's. */
  assertVersion (version: number | null) {
    if (version !== null && version > SCHEMA_VERSION) throw new PostgresFailure('newer', new NewerSchemaFound('', version))
  }

  /** `run`, with a failure turned into what it means to a client. */
  async answered<R> (work: Work<R>): Promise<R> {
    try {
      return await this.run(work)
    } catch (error) {
      throw answerFor(error as PostgresFailure)
    }
  }

  /**
   * Ids that come back as anything but int8 mean the table was changed under the store (a column
   * retyped): it is checked again, which fails (503) when the change makes it unusable.
   */
  checkIds (result: pg.QueryResult, used: Promise<void>) {
    return result.fields[0].dataTypeID === INT8_OID
      ? undefined
      : this.recheck(used).then(undefined, (error: unknown) => { throw answerFor(error as PostgresFailure) })
  }
}
