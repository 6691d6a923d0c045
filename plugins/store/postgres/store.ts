import pg from 'pg'
import type { NewPlant, Plant } from '../../../schemas/index.js'
import { systemClock, type Clock } from '../../http/clock.js'
import { PlantExistsError, StoreUnavailableError } from '../../http/errors.js'
import { ignore, poolFor, query, STATEMENT_TIMEOUT_MS, type PoolOptions } from './connection.js'
import { answerFor, isSettingError, PostgresFailure } from './failures.js'
import { checkShape } from './migration.js'
import { DEFAULT_TABLE, sqlName, type TableName } from './table.js'
import { FENCE_MARK, versionTable } from './schema-version.js'
import { CheckedTable } from './checked-table.js'
import { GroupCommit, type PendingCreate, type Settles } from '../group-commit.js'
import { subscribersOf, type OutboxEventType, type OutboxOptions, type OutboxStore, type Subscribers } from '../outbox.js'
import { createOutboxTables, deleteWithEventSql, insertWithEventsSql, outboxTables, postgresOutbox, revisionSql } from './outbox.js'
import { revised } from '../revision.js'
import { conditionalDeleteSql, updateBatchSql, type OneWriteRow } from './writes.js'
import { noLog, toPlant, type ListOptions, type PlantStore, type StoreLog, type UpdateResult, type WritePrecondition } from '../types.js'

export type { StoreLog }

/** The PostgreSQL store's options (the plugin's `postgres` option). */
export interface PostgresStoreOptions extends PoolOptions {
  /** The schema of the table; default: the search_path's first schema (public) at the first migration, kept from then on. */
  schema?: string
  /** The table's name. */
  table?: string
  log?: StoreLog
}

interface PlantRow { id: bigint, name: string, tag: string | null }

/** A plant with its revision: null where the table keeps none. */
const revisedPlant = (name: string, tag: string | null | undefined, revision: bigint | null | undefined): Plant =>
  revision == null ? toPlant(name, tag) : revised(toPlant(name, tag), revision)

// In ascending id order: batches take their row locks in one order, so that none can wait for
// another while holding a row the other waits for (a deadlock).
const insertBatchSql = (table: string, revisions: boolean) => `${FENCE_MARK}INSERT INTO ${table} (id, name, tag)
  SELECT * FROM unnest($1::int8[], $2::text[], $3::text[]) ORDER BY 1
  ON CONFLICT (id) DO NOTHING RETURNING id, ${revisionSql(revisions)}`

// A read-only database (a standby after a failover) answers reads but refuses every create: it is
// not ready; nor is a table that cannot be read (locked whole, changed), nor a schema a newer
// release upgraded (its version read, where it is recorded). Its shape is checked after.
const pingSql = (table: string, version: string | undefined) => `SELECT current_setting('transaction_read_only') = 'off' AS writable,
  EXISTS (SELECT id, name, tag FROM ${table}) AS readable, ${version === undefined ? 'NULL::int4' : `(SELECT version FROM ${version})`} AS version`

/** What the store holds once webhooks are on: creates and deletes then write their events in the same statement. */
interface OutboxState {
  options: OutboxOptions
  /** What events are stamped with. */
  clock: Clock
  to: Subscribers
  tables: ReturnType<typeof outboxTables>
  tablesMade: () => Promise<void>
  /** A write with events failed: the tables are looked for (and made) again before the next (a database or schema made anew). */
  forget: () => void
}

/** Groups a batch's creates by id, in arrival order: a repeat of an id waits for the verdict on the first. */
function groupsById (batch: PendingCreate[]): PendingCreate[][] {
  const groups = new Map<bigint, PendingCreate[]>()
  for (const create of batch) {
    const same = groups.get(create.plant.id)
    if (same) same.push(create)
    else groups.set(create.plant.id, [create])
  }
  return [...groups.values()]
}

/** An update waiting for its batch's statement. */
interface PendingUpdate extends Settles<UpdateResult> {
  id: bigint
  plant: Plant
  precondition: WritePrecondition | undefined
  traceContext: string | undefined
}

/** A batch's updates in rounds of distinct ids, each in ascending id order: a plant's later update waits for its earlier one's round. */
function distinctRounds (batch: PendingUpdate[]): PendingUpdate[][] {
  const rounds: Array<Map<bigint, PendingUpdate>> = []
  for (const update of batch) {
    const round = rounds.find((ids) => !ids.has(update.id)) ?? rounds[rounds.push(new Map()) - 1]
    round.set(update.id, update)
  }
  return rounds.map((round) => [...round.values()].sort((a, b) => Number(a.id - b.id)))
}

/**
 * A store in a PostgreSQL database, shared by any number of service instances, on a pool of its
 * own (for a URL) or on a host's `pg.Pool`, which it uses and never ends. It resolves even when
 * the server is down: the table is then created by the first operation that reaches it. A table
 * there already is checked first (table.ts): one of another shape is refused now, and
 * makes the store answer 503 when it changes later. A create resolves after COMMIT, which with
 * PostgreSQL's default synchronous_commit=on means the row is flushed to the write-ahead log on
 * stable storage. Its operations are own properties, so that a host can spread the store into a wrapper.
 */
class PostgresStore implements PlantStore, OutboxStore {
  readonly #pool: pg.Pool
  // The outbox's listeners for other instances' announcements (announce.ts), each by its stop.
  readonly #listening = new Set<() => Promise<void>>()
  readonly #shared: boolean
  readonly #name: TableName
  readonly #table: CheckedTable
  #outbox: OutboxState | undefined
  // Group commit, as for SQLite: the creates of one event-loop turn reach the database as one
  // INSERT, so they share one round trip and one WAL flush. The database's own primary key
  // decides: an id it did not insert is taken (409) once read back.
  readonly #commits = new GroupCommit<PendingCreate>((batch) => this.#insertGroups(groupsById(batch)))
  // The updates of one turn likewise: one statement, one round trip, for all of them.
  readonly #updates = new GroupCommit<PendingUpdate>(async (batch) => {
    for (const round of distinctRounds(batch)) await this.#updateRound(round)
  })

  constructor (source: string | pg.Pool, options: PostgresStoreOptions) {
    const { schema, table = DEFAULT_TABLE, log = noLog, statementTimeout = STATEMENT_TIMEOUT_MS } = options
    this.#name = { schema, table }
    this.#shared = typeof source !== 'string'
    this.#pool = poolFor(source, options, statementTimeout)
    this.#table = new CheckedTable(this.#pool, this.#name, { makeSchema: schema !== undefined, statementTimeout, log })
  }

  // Named by schema once the first migration has resolved it: a search_path changed later does not move the store.
  get #tableSql () {
    return sqlName(this.#name)
  }

  /** Whether events of `type` are written: an endpoint takes them, or the feed is on. */
  #writes (type: OutboxEventType): boolean {
    return this.#outbox !== undefined && (this.#outbox.to[type].length > 0 || this.#outbox.options.feed === true)
  }

  // With webhooks or the feed on, a create writes its events in the same statement.
  get #insertBatch () {
    const table = this.#tableSql
    const { revisions } = this.#table
    return this.#writes('plant.created')
      ? insertWithEventsSql(table, this.#outbox!.tables, revisions)
      : insertBatchSql(table, revisions)
  }

  /** Checks (and makes) the table; a server that is down is left to the first operation, a setting to fix is refused. */
  async start () {
    try {
      await this.#table.migrated()
    } catch (error) {
      if (isSettingError(error as PostgresFailure)) {
        if (!this.#shared) await this.#pool.end()
        throw (error as PostgresFailure).cause
      }
    }
    this.#table.started = true
  }

  /** The INSERT's parameters: the plants, and with plant.created subscribed, their events. */
  async #insertValues (creates: PendingCreate[]): Promise<unknown[]> {
    const plants = creates.map(({ plant }) => plant)
    const values: unknown[] = [plants.map(({ id }) => id), plants.map(({ name }) => name), plants.map(({ tag }) => tag ?? null)]
    const outbox = this.#outbox
    if (this.#writes('plant.created')) {
      await outbox!.tablesMade()
      // The message ids are made for every plant of the batch; only those of the rows inserted are stored.
      const at = new Date(outbox!.clock.now())
      const { payloads } = outbox!.options
      const traced = creates.some(({ traceContext }) => traceContext !== undefined)
      values.push(payloads.createdHead(at), JSON.stringify(plants.map(() => payloads.messageId())), at,
        outbox!.to['plant.created'], traced ? JSON.stringify(creates.map(({ traceContext }) => traceContext ?? null)) : null)
    }
    return values
  }

  /**
   * Inserts the first plant of each group (the creates of one id) and settles every create: the
   * first resolves when its row is inserted; the others are 409 once the id is stored (by it or
   * before), and share the failure when the insert failed.
   */
  async #insertGroups (groups: PendingCreate[][]): Promise<void> {
    let inserted: Map<string, bigint | null>
    let result: pg.QueryResult<{ id: unknown, revision: bigint | null }>
    let used: Promise<void>
    try {
      const values = await this.#insertValues(groups.map(([first]) => first))
      // A named statement: each connection parses and plans it once (~10 % more creates per second
      // in the bench, beside pgbench's INSERT).
      result = await this.#table.run((client, migration) => {
        used = migration
        return query<{ id: unknown, revision: bigint | null }>(client, this.#insertBatch, values, true)
      })
      // Compared as decimal text: whatever type the ids came back as, an id inserted is never taken for a 409.
      inserted = new Map(result.rows.map(({ id, revision }) => [String(id), revision]))
      if (values.length > 3 && inserted.size > 0) this.#outbox!.options.committed?.('plant.created', inserted.size)
    } catch (error) {
      const failure = error as PostgresFailure
      this.#outbox?.forget()
      // A row that another transaction holds made the whole statement give up: each row alone, so
      // that only its own creates wait for it (and fail, if it is still held).
      if (failure.where === 'wait' && groups.length > 1) {
        await Promise.all(groups.map((group) => this.#insertGroups([group])))
        return
      }
      const answer = answerFor(failure)
      for (const { reject } of groups.flat()) reject(answer)
      return
    }
    // An id the insert did not return is taken only if it is there now, and the table is still
    // the store's: a trigger or rule may have stored it elsewhere, under another id, or nowhere.
    const missing = groups.filter(([first]) => !inserted.has(String(first.plant.id))).map(([first]) => first.plant.id)
    let taken = new Set<string>()
    let failure: Error | undefined
    if (missing.length > 0) {
      try {
        taken = await this.#table.answered(async (client) => {
          await checkShape(client, this.#name)
          const { rows } = await query<{ id: unknown }>(client, `SELECT id FROM ${this.#tableSql} WHERE id = ANY($1::int8[])`, [missing])
          return new Set(rows.map(({ id }) => String(id)))
        })
      } catch (error) {
        failure = error as Error
      }
    }
    for (const [first, ...repeats] of groups) {
      const id = String(first.plant.id)
      const answer = inserted.has(id) || taken.has(id)
        ? new PlantExistsError()
        // Taken when the insert ran, gone when looked for (deleted meanwhile): free now, so try again.
        : failure ?? new StoreUnavailableError({ cause: new Error(`PostgreSQL stored nothing for id ${id}, and returned no error`) })
      if (inserted.has(id)) first.resolve(revisedPlant(first.plant.name, first.plant.tag, inserted.get(id)))
      else first.reject(answer)
      for (const { reject } of repeats) reject(answer)
    }
    // The rows are in, and answered as such; the table is checked after (its failure is logged there).
    await this.#table.checkIds(result, used!)?.catch(ignore)
  }

  create = (plant: NewPlant) => this.#commits.add<Plant>((settles) => ({ plant, traceContext: this.#outbox?.options.traceContext?.(), ...settles }))

  get = async (id: bigint) => {
    const { rows: [row] } = await this.#table.answered((client) =>
      query<PlantRow & { revision: bigint | null }>(client, `SELECT name, tag, ${revisionSql(this.#table.revisions)} FROM ${this.#tableSql} WHERE id = $1`, [id]))
    return row && revisedPlant(row.name, row.tag, row.revision)
  }

  list = ({ after, limit }: ListOptions) => this.#page('', after === undefined ? [limit] : [after, limit], after !== undefined)

  // (tag, id): the index of schema version 4 walks it in order (once built: tag-index.ts).
  listTagged = (tag: string, { after, limit }: ListOptions) =>
    this.#page('tag = $1', after === undefined ? [tag, limit] : [tag, after, limit], after !== undefined)

  /** A page of plants in id order: those `where` says ($1 on), after the cursor when `after` (the next parameter), then LIMIT (the last). */
  async #page (where: string, values: unknown[], after: boolean) {
    let used: Promise<void>
    const conditions = [where, after ? `id > $${values.length - 1}` : ''].filter((condition) => condition !== '')
    const sql = `SELECT id, name, tag FROM ${this.#tableSql}${conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : ''} ORDER BY id LIMIT $${values.length}`
    const result = await this.#table.answered((client, migration) => {
      used = migration
      return query<PlantRow>(client, sql, values)
    })
    await this.#table.checkIds(result, used!)
    return result.rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
  }

  update = (id: bigint, plant: Plant, precondition?: WritePrecondition) =>
    this.#updates.add<UpdateResult>((settles) => ({ id, plant, precondition, traceContext: this.#outbox?.options.traceContext?.(), ...settles }))

  /** Writes updates of distinct ids in one statement and settles each; a lock another transaction holds makes each go alone. */
  async #updateRound (round: PendingUpdate[]): Promise<void> {
    let rows: Map<string, OneWriteRow>
    try {
      rows = new Map((await this.#updateStatement(round)).map((row) => [String(row.id), row]))
    } catch (error) {
      const failure = error as PostgresFailure
      if (failure.where === 'wait' && round.length > 1) {
        await Promise.all(round.map((update) => this.#updateRound([update])))
        return
      }
      for (const { reject } of round) reject(answerFor(failure))
      return
    }
    for (const { id, plant, resolve } of round) {
      const row = rows.get(String(id))!
      resolve(row.written ? revisedPlant(plant.name, plant.tag, row.revision) : row.found ? 'precondition-failed' : 'not-found')
    }
  }

  async #updateStatement (round: PendingUpdate[]) {
    const values: unknown[] = [round.map(({ id }) => id), round.map(({ plant }) => plant.name), round.map(({ plant }) => plant.tag ?? null),
      JSON.stringify(round.map(({ precondition }) => precondition?.ifRevision ?? null))]
    const outbox = this.#writes('plant.updated') ? this.#outbox : undefined
    if (outbox !== undefined) {
      await outbox.tablesMade()
      const at = new Date(outbox.clock.now())
      const { payloads } = outbox.options
      // JSON writes an update without a trace context as null.
      values.push(at, JSON.stringify(round.map(() => payloads.messageId())), JSON.stringify(round.map(({ id, plant }) => payloads.updated({ id, ...plant }, at))),
        JSON.stringify(round.map(({ traceContext }) => traceContext)), outbox.to['plant.updated'])
    }
    // With events, a batch never waits for a row: its transaction id, taken at its first row, would
    // order its events before those of a writer it then waited for (the feed reads in that order).
    // It gives up at once and each update goes alone: a lone row's writer takes its id no earlier
    // than its wait began, after whoever it waits for took theirs.
    const nowait = outbox !== undefined && round.length > 1
    const { rows } = await this.#table.run((client) =>
      query<OneWriteRow & { id: bigint }>(client, updateBatchSql(this.#tableSql, this.#table.revisions, outbox?.tables, nowait), values, true))
    const written = rows.filter((row) => row.written).length
    if (outbox !== undefined && written > 0) outbox.options.committed?.('plant.updated', written)
    return rows
  }

  /** One plant's write, with its event in the same statement when an endpoint takes its type. */
  async #writeOne (type: 'plant.updated' | 'plant.deleted', sqlOf: typeof conditionalDeleteSql, values: unknown[],
    payloadOf: (at: Date, payloads: OutboxOptions['payloads']) => string): Promise<OneWriteRow> {
    const outbox = this.#writes(type) ? this.#outbox : undefined
    let all = values
    if (outbox !== undefined) {
      await outbox.tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
      const at = new Date(outbox.clock.now())
      const { payloads, traceContext } = outbox.options
      all = [...values, payloads.messageId(), payloadOf(at, payloads), at, outbox.to[type], traceContext?.()] // pg sends undefined as NULL
    }
    const { rows: [row] } = await this.#table.answered((client) => query<OneWriteRow>(client, sqlOf(this.#tableSql, this.#table.revisions, outbox?.tables), all, true))
    if (row.written && outbox !== undefined) outbox.options.committed?.(type, 1)
    return row
  }

  delete = async (id: bigint, precondition?: WritePrecondition) => {
    if (precondition?.ifRevision !== undefined) {
      const row = await this.#writeOne('plant.deleted', conditionalDeleteSql, [id, precondition.ifRevision], (at, payloads) => payloads.deleted(id, at))
      return row.written || (row.found ? 'precondition-failed' as const : false)
    }
    const outbox = this.#outbox
    if (!this.#writes('plant.deleted')) {
      const { rowCount } = await this.#table.answered((client) => query(client, `${FENCE_MARK}DELETE FROM ${this.#tableSql} WHERE id = $1`, [id]))
      return rowCount === 1
    }
    const at = new Date(outbox!.clock.now())
    const { payloads, committed, traceContext } = outbox!.options
    const { tables, to } = outbox!
    const deleteSql = deleteWithEventSql(this.#tableSql, tables)
    await outbox!.tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
    const { rowCount } = await this.#table.answered((client) => query(client, deleteSql, [id, payloads.messageId(), payloads.deleted(id, at), at, to['plant.deleted'], traceContext?.() ?? null]))
      .catch((error: unknown) => {
        outbox!.forget()
        throw error
      })
    if (rowCount === 1) committed?.('plant.deleted', 1)
    return rowCount === 1
  }

  openOutbox = async (outboxOptions: OutboxOptions) => {
    const tables = outboxTables(this.#name)
    const endpointNames = outboxOptions.endpoints.map(({ name }) => name)
    // Made now when the server answers; while it is down, by the first operation that needs them.
    let made: Promise<void> | undefined
    const tablesMade = () => {
      made ??= this.#table.run((client) => createOutboxTables(client, tables, this.#name, endpointNames)).catch((error: unknown) => {
        made = undefined
        throw error
      })
      return made
    }
    try {
      await tablesMade()
    } catch (error) {
      if (isSettingError(error as PostgresFailure)) throw (error as PostgresFailure).cause
    }
    const runQuery = async <R extends pg.QueryResultRow>(text: string, values: unknown[], prepared?: boolean) => {
      await tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
      return this.#table.answered((client) => query<R>(client, text, values, prepared))
    }
    const forget = () => { made = undefined }
    this.#outbox = { options: outboxOptions, clock: outboxOptions.clock ?? systemClock, to: subscribersOf(outboxOptions.endpoints), tables, tablesMade, forget }
    return postgresOutbox(tables, runQuery, outboxOptions, {
      plantsTable: this.#name.table,
      // pg-pool fills in its default (10) when a pool is made without one.
      poolMax: Number(this.#pool.options.max),
      connect: () => this.#pool.connect(),
      notify: (sql) => this.#pool.query(sql),
      listening: this.#listening
    })
  }

  ping = async () => {
    this.#table.forgetUnusable()
    await this.#table.answered(async (client) => {
      const ping = pingSql(this.#tableSql, this.#table.versioned ? versionTable(this.#name) : undefined)
      const { rows: [{ writable, version }] } = await query<{ writable: boolean, version: number | null }>(client, ping)
      this.#table.assertVersion(version)
      // Thrown inside, so that the read-only session is closed rather than pooled.
      if (!writable) throw new PostgresFailure('write', new Error('the database is read-only'))
      await checkShape(client, this.#name)
    })
  }

  close = async () => {
    // Their connections given back first: a pool's end waits for every connection out.
    await Promise.all([...this.#listening].map((stop) => stop()).concat(this.#table.tagIndex.close()))
    // A shared pool is its owner's to end.
    if (!this.#shared && !this.#pool.ending) await this.#pool.end()
  }
}

export async function openPostgresStore (source: string | pg.Pool, options: PostgresStoreOptions = {}): Promise<PlantStore & Required<Pick<PlantStore, 'update' | 'listTagged'>> & OutboxStore> {
  const store = new PostgresStore(source, options)
  await store.start()
  return store
}
