import { performance } from 'node:perf_hooks'
import pg from 'pg'
import type { StoreLog } from '../types.js'
import { ignore } from './connection.js'
import { sqlName, tagIndexName, tagIndexSql, type TableName } from './table.js'

/** Whether the tag index (its name the parameter `param`) is there and valid: the catalog's `indisvalid`. */
export const tagIndexValid = (param: string) => `coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(${param})), false)`

/** The tag index's SQL name, for to_regclass: in the plants table's schema. */
export const tagIndexRegclass = (name: TableName) => sqlName({ schema: name.schema, table: tagIndexName(name) })

/**
 * Schema version 4's tag index on a table that already had plants, built after the migration: an
 * index on millions of rows takes longer than a migration may (a start would never end), so it is
 * built CONCURRENTLY, writes going on meanwhile, on a connection of its own with no time bound.
 * Until it is valid, a tag's page is read from the table itself: slower, the same answer. One
 * instance builds it (an advisory lock; another that starts meanwhile leaves it to that one). A
 * build cut short (a crash, a cancel, the store's close) leaves an invalid index, which the next
 * start drops and builds again.
 */
export class TagIndexBuild {
  #building: Promise<void> | undefined
  #client: pg.PoolClient | undefined
  #closing = false

  constructor (readonly pool: pg.Pool, readonly name: TableName, readonly log: StoreLog) {}

  /** Starts the build unless one runs: its end. Never rejects (a failure is logged, and the next start tries again). */
  start (): Promise<void> {
    this.#building ??= this.#build().catch((error: Error) => {
      if (this.#closing) return
      this.log.warn(`plant-store: the index ${tagIndexName(this.name)} could not be built (${error.message}); tag lists read the table ` +
        `until a start builds it, or its owner runs \`${tagIndexSql(this.name, true)}\``)
    }).finally(() => { this.#building = undefined })
    return this.#building
  }

  async #build () {
    const client = this.#client = await this.pool.connect()
    // Each statement sent only while the store is open: close() cancels the one running.
    const run = async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
      if (this.#closing) throw new Error('the store closed')
      return (await client.query<R>(text, values)).rows[0]
    }
    try {
      const index = tagIndexRegclass(this.name)
      if (!(await run<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [`plant-store index ${index}`])).locked) return
      if ((await run<{ valid: boolean }>(`SELECT ${tagIndexValid('$1')} AS valid`, [index])).valid) return
      await run(`SELECT set_config('statement_timeout', '0', false), set_config('lock_timeout', '0', false),
        set_config('application_name', 'plant-store index build', false)`)
      // Left invalid by a build cut short: IF NOT EXISTS would keep it so.
      await run(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`)
      this.log.info(`plant-store: building the index ${tagIndexName(this.name)} concurrently; tag lists read the table until it is done`)
      const started = performance.now()
      await run(tagIndexSql(this.name, true))
      this.log.info(`plant-store: the index ${tagIndexName(this.name)} is built (${Math.round(performance.now() - started)} ms)`)
    } finally {
      this.#client = undefined
      // Its session's settings and advisory lock end with it.
      client.release(true)
    }
  }

  /** Cancels a build in flight (the next start builds the index again) and waits for it to end. */
  async close () {
    this.#closing = true
    const { processID } = (this.#client ?? {}) as { processID?: number }
    if (processID !== undefined) await this.pool.query('SELECT pg_cancel_backend($1)', [processID]).catch(ignore)
    await this.#building
  }
}
