import pg from 'pg'
import type { NewPlant } from '../../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../../http/errors.js'
import { locateFailure, isSettingError, PostgresFailure } from './failures.js'
import {
  createTableSql, DEFAULT_TABLE, shapeProblems, sqlName, TABLE_SHAPE_SQL, tableShapeError, type TableName, type TableShape
} from './table.js'
import { GroupCommit, type PendingCreate } from '../group-commit.js'
import { subscribersOf, type OutboxOptions, type OutboxStore, type Subscribers } from '../outbox.js'
import {
  createVersionTableSql, newerSchemaError, privilegeError, recordedVersionSql, recordVersionSql, SCHEMA_VERSION, UNRECORDED_VERSION, versionTable
} from './schema-version.js'
import { createOutboxTables, deleteWithEventSql, insertWithEventsSql, outboxTables, postgresOutbox } from './outbox.js'
import { noLog, toPlant, type ListOptions, type PlantStore, type StoreLog } from '../types.js'

// Connecting (or waiting for a pooled connection) and each statement are bounded, so that a
// request fails with 503 within about 2 s when the server is down, unreachable or stuck. The
// server cancels a slow statement first, which keeps the connection; our own deadline, a little
// later, is the backstop for a server that does not answer at all.
const CONNECT_TIMEOUT_MS = 1000
const STATEMENT_TIMEOUT_MS = 800
const DEADLINE_AFTER_STATEMENT_MS = 200
// A row another transaction holds (an insert of the same id not yet committed) is waited for this
// long: far longer than another instance's commit takes, short enough to try each row of a batch
// alone after it and still answer within the bound above.
const LOCK_TIMEOUT_MS = 300
// A migration is a few statements, some of which wait for another instance's migration.
const MIGRATION_TIMEOUT_MS = 5000
// While the table is unusable, operations fail at once (503) and the catalog is asked again at most this often.
const RECHECK_MS = 1000

const INT8_OID = pg.types.builtins.INT8
// SQLSTATE: the database user lacks a privilege (CREATE on the schema, SELECT on a table...).
const INSUFFICIENT_PRIVILEGE = '42501'

// int8 as an exact BigInt for the store's own queries only: pg.types.setTypeParser, or a pool's
// `types`, would change what a host's queries get too (on a shared pool).
const TYPES = {
  getTypeParser: (oid: number, format?: string) =>
    oid === INT8_OID && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format as 'text')
} as pg.CustomTypesConfig

export type { StoreLog }

/** The PostgreSQL store's options (the plugin's `postgres` option). */
export interface PostgresStoreOptions {
  /** The schema of the table; default: the search_path's first schema (public) at the first migration, kept from then on. */
  schema?: string
  /** The table's name. */
  table?: string
  /** The most connections of the store's own pool (not of a shared one). */
  poolSize?: number
  /** How long to wait for a connection of the store's own pool, in ms. */
  connectionTimeout?: number
  /** How long an idle connection of the store's own pool is kept, in ms. */
  idleTimeout?: number
  /** The longest a statement may take, in ms; the server cancels it then (on the store's own pool). */
  statementTimeout?: number
  log?: StoreLog
}

interface PlantRow { id: bigint, name: string, tag: string | null }

// In ascending id order: batches take their row locks in one order, so that none can wait for
// another while holding a row the other waits for (a deadlock).
const insertBatchSql = (table: string) => `INSERT INTO ${table} (id, name, tag)
  SELECT * FROM unnest($1::int8[], $2::text[], $3::text[]) ORDER BY 1
  ON CONFLICT (id) DO NOTHING RETURNING id`
// Per table: a named statement is prepared once per connection, under its name.
const insertBatchName = (table: string) => `plant-store-insert-batch ${table}`

// A read-only database (a standby after a failover) answers reads but refuses every create: it is
// not ready; nor is a table that cannot be read (locked whole, changed). Its shape is checked after.
const pingSql = (table: string) => `SELECT current_setting('transaction_read_only') = 'off' AS writable,
  EXISTS (SELECT id, name, tag FROM ${table}) AS readable`

// A pooled client's socket failure is also emitted as 'error': unheard, that would crash the process.
function ignore () {}

// Clients of the store's own pools that reported an error while no one else listened: lost.
const broken = new WeakSet<pg.ClientBase>()

/** A query of the store's own: ids come back as BigInt. */
const query = <R extends pg.QueryResultRow> (client: pg.PoolClient, text: string, values: unknown[] = [], name?: string) =>
  client.query<R>({ text, values, name, types: TYPES })

/**
 * Runs `work` on a pooled connection within `timeout` ms, and classifies a failure by where it
 * happened (see Where). The connection is reused after a failure only when the server answered it
 * and the session is in a known state; otherwise the pool closes it.
 */
async function withClient<R> (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<R>, timeout: number): Promise<R> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw locateFailure(error, true, false)
  }
  let lost = broken.has(client)
  const onLost = () => { lost = true }
  client.on('error', onLost).on('end', onLost)
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      lost = true
      reject(new Error(`PostgreSQL did not answer within ${timeout} ms`))
    }, timeout)
  })
  // Released, the client is the pool's again: its own listener hears of an idle connection's end.
  const done = () => {
    clearTimeout(timer)
    client.removeListener('error', onLost).removeListener('end', onLost)
  }
  try {
    const result = await Promise.race([work(client), deadline])
    done()
    client.release()
    return result
  } catch (error) {
    done()
    const failure = locateFailure(error, false, lost)
    // After a wait given up or a refused statement the session is idle and in sync: no reconnect.
    // A read-only session is dropped, so that a database made writable again is used as such.
    const reusable = error instanceof pg.DatabaseError && (failure.where === 'wait' || failure.where === 'refused')
    client.release(!reusable)
    throw failure
  }
}

/** Throws a `table` failure when the table is not one the store can use (a `schema` one when it is gone). */
async function checkShape (client: pg.PoolClient, name: TableName) {
  const { rows: [shape] } = await query<TableShape>(client, TABLE_SHAPE_SQL, [sqlName(name)])
  // Gone since the migration or the ping's read of it (dropped meanwhile): made again, as for 42P01.
  /* c8 ignore next */
  if (shape === undefined) throw new PostgresFailure('schema', new Error(`the table ${sqlName(name)} is gone`))
  const problems = shapeProblems(shape)
  if (problems.length > 0) throw new PostgresFailure('table', tableShapeError(name, shape.schema, problems))
}

/**
 * Creates the table (and its schema, when the options name one) when it is not there, checks that
 * it is one the store can use, then records the schema version (schema-version.ts). A database a
 * newer release wrote is refused. A table named without a schema is given the one the
 * search_path gives it now, for good: a search_path changed later (another `plants` put first)
 * does not move the store.
 */
async function migrate (client: pg.PoolClient, name: TableName, makeSchema: boolean) {
  if (name.schema === undefined) {
    const { rows: [{ schema }] } = await query<{ schema: string }>(client, "SELECT coalesce(current_schema(), 'public') AS schema")
    name.schema = schema
  }
  await client.query('BEGIN')
  try {
    // Instances starting together take turns; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    const { rows: [{ present, versioned }] } = await query<{ present: boolean, versioned: boolean }>(client,
      'SELECT to_regclass($1) IS NOT NULL AS present, to_regclass($2) IS NOT NULL AS versioned', [sqlName(name), versionTable(name)])
    const recorded = versioned ? (await query<{ version: number | null }>(client, recordedVersionSql(name))).rows[0].version : null
    const version = recorded ?? (present ? UNRECORDED_VERSION : 0)
    if (version > SCHEMA_VERSION) throw new PostgresFailure('table', newerSchemaError(name, version))
    if (!present) {
      // Made only when missing: CREATE ... IF NOT EXISTS would need the CREATE privilege even then.
      if (makeSchema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(name.schema)}`)
      await client.query(createTableSql(name))
    }
    // Nothing is written beside a table that is not the store's (a host's own `plants`).
    await checkShape(client, name)
    if (recorded === null || recorded < SCHEMA_VERSION) await recordVersion(client, name, versioned, present)
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(ignore)
    throw (error as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE ? new PostgresFailure('table', privilegeError(error as Error)) : error
  }
}

/**
 * Records the schema version, making its table when missing. A database the release before
 * versions wrote is at this version already: when its record cannot be made (a user without
 * CREATE), it is served as it is, and a later release knows it for version 1 the same way.
 */
async function recordVersion (client: pg.PoolClient, name: TableName, versioned: boolean, present: boolean) {
  const statements = versioned ? [recordVersionSql(name)] : [createVersionTableSql(name), recordVersionSql(name)]
  if (!present || versioned) {
    for (const statement of statements) await client.query(statement)
    return
  }
  await client.query('SAVEPOINT record_version')
  try {
    for (const statement of statements) await client.query(statement)
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT record_version')
  }
}

/** What a failure means to a client: 503 when the store could not answer, the error itself for a bug. */
function answerFor (failure: PostgresFailure): Error {
  return failure.where === undefined ? failure.cause as Error : new StoreUnavailableError({ cause: failure.cause })
}

/** What the store holds once webhooks are on: creates and deletes then write their events in the same statement. */
interface OutboxState {
  options: OutboxOptions
  to: Subscribers
  tables: ReturnType<typeof outboxTables>
  tablesMade: () => Promise<void>
}

/** The store's own pool for a URL; a host's pool is used as it is. */
function poolFor (source: string | pg.Pool, options: PostgresStoreOptions, statementTimeout: number): pg.Pool {
  if (typeof source !== 'string') return source
  const pool = new pg.Pool({
    connectionString: source,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectionTimeout ?? CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: options.idleTimeout,
    statement_timeout: statementTimeout,
    lock_timeout: Math.min(LOCK_TIMEOUT_MS, statementTimeout)
  })
  // The pool drops a broken idle connection and opens another when needed; without a listener,
  // a connection the server closes (restart, failover) would crash the process. A shared pool's
  // listener is its owner's.
  pool.on('error', ignore)
  // The pool removes its own listener from a new client as it hands it over, inside the socket's
  // data event that completed the connection: a termination (57P01) in the same chunk reached a
  // client that no one listened to yet, and crashed the process. Each has one for its whole life.
  pool.on('connect', (client) => client.on('error', () => broken.add(client)))
  return pool
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

/**
 * The table's state: checked (and made) once, then again whenever an operation finds it changed.
 * While it is unusable, operations fail at once and the catalog is asked again at most every RECHECK_MS.
 */
class TableCheck {
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

type Work<R> = (client: pg.PoolClient, used: Promise<void>) => Promise<R>

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
  readonly #queryTimeout: number
  readonly #table: TableCheck
  #outbox: OutboxState | undefined
  // Group commit, as for SQLite: the creates of one event-loop turn reach the database as one
  // INSERT, so they share one round trip and one WAL flush. The database's own primary key
  // decides: an id it did not insert is taken (409) once read back.
  readonly #commits = new GroupCommit((batch) => this.#insertGroups(groupsById(batch)))

  constructor (source: string | pg.Pool, options: PostgresStoreOptions) {
    const { schema, table = DEFAULT_TABLE, log = noLog, statementTimeout = STATEMENT_TIMEOUT_MS } = options
    this.#name = { schema, table }
    this.#queryTimeout = statementTimeout + DEADLINE_AFTER_STATEMENT_MS
    this.#shared = typeof source !== 'string'
    this.#pool = poolFor(source, options, statementTimeout)
    this.#table = new TableCheck(this.#pool, this.#name, schema !== undefined, log)
  }

  // Named by schema once the first migration has resolved it: a search_path changed later does not move the store.
  get #tableSql () {
    return sqlName(this.#name)
  }

  // With webhooks on, a create writes its events in the same statement.
  get #insertBatch () {
    const table = this.#tableSql
    return this.#outbox !== undefined && this.#outbox.to['plant.created'].length > 0
      ? { text: insertWithEventsSql(table, this.#outbox.tables), name: `${insertBatchName(table)} with events` }
      : { text: insertBatchSql(table), name: insertBatchName(table) }
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

  /**
   * Runs `work` once the table is there and usable. After a failure that is not the id's nor an
   * outage's (a column renamed, the primary key dropped, a privilege revoked, the table dropped),
   * the table is checked again: an unusable one makes the failure a `table` one (503), a missing
   * one is made again and the work tried once more. Once more too when the session's prepared
   * statements were not what the driver held (on another connection: withClient closed that one).
   */
  async #run<R> (work: Work<R>, again = true): Promise<R> {
    const used = this.#table.migrated()
    await used
    try {
      return await withClient(this.#pool, (client) => work(client, used), this.#queryTimeout)
    } catch (error) {
      const { where } = error as PostgresFailure
      if (where === 'session' && again) return this.#run(work, false)
      if (where !== 'schema' && where !== 'table' && where !== 'refused' && where !== undefined) throw error
      await this.#table.recheck(used)
      if (where === 'schema' && again) return this.#run(work, false)
      throw error
    }
  }

  /**
   * Ids that come back as anything but int8 mean the table was changed under the store (a column
   * retyped): it is checked again, which fails (503) when the change makes it unusable.
   */
  #checkIds (result: pg.QueryResult, used: Promise<void>) {
    return result.fields[0].dataTypeID === INT8_OID
      ? undefined
      : this.#table.recheck(used).then(undefined, (error: unknown) => { throw answerFor(error as PostgresFailure) })
  }

  /** `run`, with a failure turned into what it means to a client. */
  async #answered<R> (work: Work<R>): Promise<R> {
    try {
      return await this.#run(work)
    } catch (error) {
      throw answerFor(error as PostgresFailure)
    }
  }

  /** The INSERT's parameters: the plants, and with plant.created subscribed, their events. */
  async #insertValues (creates: PendingCreate[]): Promise<unknown[]> {
    const plants = creates.map(({ plant }) => plant)
    const values: unknown[] = [plants.map(({ id }) => id), plants.map(({ name }) => name), plants.map(({ tag }) => tag ?? null)]
    const outbox = this.#outbox
    if (outbox !== undefined && outbox.to['plant.created'].length > 0) {
      await outbox.tablesMade()
      // The message ids are made for every plant of the batch; only those of the rows inserted are stored.
      const at = new Date()
      const { payloads } = outbox.options
      const traced = creates.some(({ traceContext }) => traceContext !== undefined)
      values.push(payloads.createdHead(at), JSON.stringify(plants.map(() => payloads.messageId())), at,
        outbox.to['plant.created'], traced ? JSON.stringify(creates.map(({ traceContext }) => traceContext ?? null)) : null)
    }
    return values
  }

  /**
   * Inserts the first plant of each group (the creates of one id) and settles every create: the
   * first resolves when its row is inserted; the others are 409 once the id is stored (by it or
   * before), and share the failure when the insert failed.
   */
  async #insertGroups (groups: PendingCreate[][]): Promise<void> {
    let inserted: Set<string>
    let result: pg.QueryResult<{ id: unknown }>
    let used: Promise<void>
    try {
      const values = await this.#insertValues(groups.map(([first]) => first))
      // A named statement: each connection parses and plans it once (~10 % more creates per second
      // in the bench, beside pgbench's INSERT).
      result = await this.#run((client, migration) => {
        used = migration
        return query<{ id: unknown }>(client, this.#insertBatch.text, values, this.#insertBatch.name)
      })
      // Compared as decimal text: whatever type the ids came back as, an id inserted is never taken for a 409.
      inserted = new Set(result.rows.map(({ id }) => String(id)))
      if (values.length > 3 && inserted.size > 0) this.#outbox!.options.committed?.('plant.created', inserted.size)
    } catch (error) {
      const failure = error as PostgresFailure
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
        taken = await this.#answered(async (client) => {
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
      if (inserted.has(id)) first.resolve(toPlant(first.plant.name, first.plant.tag))
      else first.reject(answer)
      for (const { reject } of repeats) reject(answer)
    }
    // The rows are in, and answered as such; the table is checked after (its failure is logged there).
    await this.#checkIds(result, used!)?.catch(ignore)
  }

  create = (plant: NewPlant) => this.#commits.create(plant, this.#outbox?.options.traceContext?.())

  get = async (id: bigint) => {
    const { rows: [row] } = await this.#answered((client) => query<PlantRow>(client, `SELECT name, tag FROM ${this.#tableSql} WHERE id = $1`, [id]))
    return row && toPlant(row.name, row.tag)
  }

  list = async ({ after, limit }: ListOptions) => {
    let used: Promise<void>
    const table = this.#tableSql
    const result = await this.#answered((client, migration) => {
      used = migration
      return after === undefined
        ? query<PlantRow>(client, `SELECT id, name, tag FROM ${table} ORDER BY id LIMIT $1`, [limit])
        : query<PlantRow>(client, `SELECT id, name, tag FROM ${table} WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit])
    })
    await this.#checkIds(result, used!)
    return result.rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
  }

  delete = async (id: bigint) => {
    const outbox = this.#outbox
    if (outbox === undefined || outbox.to['plant.deleted'].length === 0) {
      const { rowCount } = await this.#answered((client) => query(client, `DELETE FROM ${this.#tableSql} WHERE id = $1`, [id]))
      return rowCount === 1
    }
    const at = new Date()
    const { payloads, committed, traceContext } = outbox.options
    const { tables, to } = outbox
    const deleteSql = deleteWithEventSql(this.#tableSql, tables)
    await outbox.tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
    const { rowCount } = await this.#answered((client) => query(client, deleteSql, [id, payloads.messageId(), payloads.deleted(id, at), at, to['plant.deleted'], traceContext?.() ?? null]))
    if (rowCount === 1) committed?.('plant.deleted', 1)
    return rowCount === 1
  }

  openOutbox = async (outboxOptions: OutboxOptions) => {
    const tables = outboxTables(this.#name)
    const endpointNames = outboxOptions.endpoints.map(({ name }) => name)
    // Made now when the server answers; while it is down, by the first operation that needs them.
    let made: Promise<void> | undefined
    const tablesMade = () => {
      made ??= this.#run((client) => createOutboxTables(client, tables, this.#name, endpointNames)).catch((error: unknown) => {
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
    const runQuery = async <R extends pg.QueryResultRow>(text: string, values: unknown[], statement?: string) => {
      await tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
      return this.#answered((client) => query<R>(client, text, values, statement))
    }
    this.#outbox = { options: outboxOptions, to: subscribersOf(outboxOptions.endpoints), tables, tablesMade }
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
    const ping = pingSql(this.#tableSql)
    await this.#answered(async (client) => {
      const { rows: [{ writable }] } = await query<{ writable: boolean }>(client, ping)
      // Thrown inside, so that the read-only session is closed rather than pooled.
      if (!writable) throw new PostgresFailure('write', new Error('the database is read-only'))
      await checkShape(client, this.#name)
    })
  }

  close = async () => {
    // Their connections given back first: a pool's end waits for every connection out.
    await Promise.all([...this.#listening].map((stop) => stop()))
    // A shared pool is its owner's to end.
    if (!this.#shared && !this.#pool.ending) await this.#pool.end()
  }
}

export async function openPostgresStore (source: string | pg.Pool, options: PostgresStoreOptions = {}): Promise<PlantStore & OutboxStore> {
  const store = new PostgresStore(source, options)
  await store.start()
  return store
}
