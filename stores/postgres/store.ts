import pg from 'pg'
import type { NewPlant, Plant } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../../errors/index.js'
import { classify, isSettingError, PostgresFailure } from './failures.js'
import {
  createTableSql, DEFAULT_TABLE, shapeProblems, sqlName, TABLE_SHAPE_SQL, tableShapeError, type TableName, type TableShape
} from './table.js'
import type { OutboxEventType, OutboxOptions, OutboxStore } from '../outbox.js'
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

interface PendingCreate {
  plant: NewPlant
  resolve: (plant: Plant) => void
  reject: (error: unknown) => void
}

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

/**
 * Gives every client of a pool an error listener for its whole life. The pool removes its own
 * listener from a new client as it hands it over, inside the socket's data event that completed
 * the connection: a termination (57P01) in the same chunk reached a client that no one listened
 * to yet, and crashed the process.
 */
function listenForLife (pool: pg.Pool) {
  pool.on('connect', (client) => client.on('error', () => broken.add(client)))
}

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
    throw classify(error, true, false)
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
    const failure = classify(error, false, lost)
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
 * Creates the table (and its schema) when it is not there, then checks that it is one the store
 * can use. A table named without a schema is given the one the search_path gives it now, for
 * good: a search_path changed later (another `plants` put first) does not move the store. Only a
 * schema named in the options is made; the search_path's is the database owner's.
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
    const { rows: [{ present }] } = await query<{ present: boolean }>(client, 'SELECT to_regclass($1) IS NOT NULL AS present', [sqlName(name)])
    if (!present) {
      // Made only when missing: CREATE ... IF NOT EXISTS would need the CREATE privilege even then.
      if (makeSchema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(name.schema)}`)
      await client.query(createTableSql(name))
    }
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(ignore)
    throw error
  }
  await checkShape(client, name)
}

/** What a failure means to a client: 503 when the store could not answer, the error itself for a bug. */
function answerFor (failure: PostgresFailure): Error {
  return failure.where === undefined ? failure.cause as Error : new StoreUnavailableError({ cause: failure.cause })
}

/**
 * A store in a PostgreSQL database, shared by any number of service instances, on a pool of its
 * own (for a URL) or on a host's `pg.Pool`, which it uses and never ends. It resolves even when
 * the server is down: the table is then created by the first operation that reaches it. A table
 * there already is checked first (table.ts): one of another shape is refused now, and
 * makes the store answer 503 when it changes later. A create resolves after COMMIT, which with
 * PostgreSQL's default synchronous_commit=on means the row is flushed to the write-ahead log on
 * stable storage.
 */
export async function openPostgresStore (source: string | pg.Pool, options: PostgresStoreOptions = {}): Promise<PlantStore & OutboxStore> {
  const { schema, table = DEFAULT_TABLE, log = noLog, statementTimeout = STATEMENT_TIMEOUT_MS } = options
  const name: TableName = { schema, table }
  // Set once webhooks are on: creates and deletes then write their events in the same statement.
  let outbox: {
    options: OutboxOptions
    to: Record<OutboxEventType, string[]>
    tables: ReturnType<typeof outboxTables>
    deleteSql: string
    tablesMade: () => Promise<void>
  } | undefined
  let tableSql = ''
  let ping = ''
  let insertBatch = { text: '', name: '' }
  /** The statements that name the table: again once its schema is known, and once webhooks are on. */
  function nameStatements () {
    tableSql = sqlName(name)
    ping = pingSql(tableSql)
    insertBatch = outbox !== undefined && outbox.to['plant.created'].length > 0
      ? { text: insertWithEventsSql(tableSql, outbox.tables), name: `${insertBatchName(tableSql)} with events` }
      : { text: insertBatchSql(tableSql), name: insertBatchName(tableSql) }
    if (outbox !== undefined) outbox.deleteSql = deleteWithEventSql(tableSql, outbox.tables)
  }
  nameStatements()
  const queryTimeout = statementTimeout + DEADLINE_AFTER_STATEMENT_MS
  const shared = typeof source !== 'string'
  const pool = shared
    ? source
    : new pg.Pool({
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
  if (!shared) {
    pool.on('error', ignore)
    listenForLife(pool)
  }

  // The table's state: checked (and made) once, then again whenever an operation finds it changed.
  let migration: Promise<void> | undefined
  let started = false
  let unusable: string | undefined // what was logged of the table last
  const migrated = () => {
    const current = migration ??= withClient(pool, (client) => migrate(client, name, schema !== undefined), MIGRATION_TIMEOUT_MS).then(() => {
      if (tableSql !== sqlName(name)) nameStatements()
      if (unusable !== undefined) log.info(`plant-store: the PostgreSQL table ${tableSql} can be used again`)
      unusable = undefined
    }, (error) => {
      const failure = error as PostgresFailure
      if (failure.where !== 'table') {
        migration = undefined
        throw error
      }
      // One line when the table turns unusable, not one per request; a start-up refusal says it itself.
      const message = (failure.cause as Error).message
      if (started && message !== unusable) log.warn(message)
      unusable = message
      // Meanwhile every operation fails at once, without asking the database.
      // c8: whether a recheck replaced this attempt within RECHECK_MS depends on timing alone.
      /* c8 ignore next */
      setTimeout(() => { if (migration === current) migration = undefined }, RECHECK_MS).unref()
      throw error
    })
    return current
  }
  /** Has the table checked again, unless another failure did so already since `used`. */
  function recheck (used: Promise<void>) {
    if (migration === used) migration = undefined
    return migrated()
  }

  /**
   * Runs `work` once the table is there and usable. After a failure that is not the id's nor an
   * outage's (a column renamed, the primary key dropped, a privilege revoked, the table dropped),
   * the table is checked again: an unusable one makes the failure a `table` one (503), a missing
   * one is made again and the work tried once more. Once more too when the session's prepared
   * statements were not what the driver held (on another connection: withClient closed that one).
   */
  async function run<R> (work: (client: pg.PoolClient, used: Promise<void>) => Promise<R>, again = true): Promise<R> {
    const used = migrated()
    await used
    try {
      return await withClient(pool, (client) => work(client, used), queryTimeout)
    } catch (error) {
      const { where } = error as PostgresFailure
      if (where === 'session' && again) return run(work, false)
      if (where !== 'schema' && where !== 'table' && where !== 'refused' && where !== undefined) throw error
      await recheck(used)
      if (where === 'schema' && again) return run(work, false)
      throw error
    }
  }

  /**
   * Ids that come back as anything but int8 mean the table was changed under the store (a column
   * retyped): it is checked again, which fails (503) when the change makes it unusable.
   */
  const checkIds = (result: pg.QueryResult, used: Promise<void>) => result.fields[0].dataTypeID === INT8_OID
    ? undefined
    : recheck(used).then(undefined, (error: unknown) => { throw answerFor(error as PostgresFailure) })

  /** `run`, with a failure turned into what it means to a client. */
  async function answered<R> (work: (client: pg.PoolClient, used: Promise<void>) => Promise<R>): Promise<R> {
    try {
      return await run(work)
    } catch (error) {
      throw answerFor(error as PostgresFailure)
    }
  }

  try {
    await migrated()
  } catch (error) {
    // A server that is down is retried by the first operation; a setting to fix is refused now.
    if (isSettingError(error as PostgresFailure)) {
      if (!shared) await pool.end()
      throw (error as PostgresFailure).cause
    }
  }
  started = true

  /**
   * Inserts the first plant of each group (the creates of one id) and settles every create: the
   * first resolves when its row is inserted; the others are 409 once the id is stored (by it or
   * before), and share the failure when the insert failed.
   */
  async function insertGroups (groups: PendingCreate[][]): Promise<void> {
    const plants = groups.map(([first]) => first.plant)
    let inserted: Set<string>
    let result: pg.QueryResult<{ id: unknown }>
    let used: Promise<void>
    try {
      // A named statement: each connection parses and plans it once (~10 % more creates per second
      // in the bench, beside pgbench's INSERT).
      const values: unknown[] = [plants.map(({ id }) => id), plants.map(({ name }) => name), plants.map(({ tag }) => tag ?? null)]
      if (outbox !== undefined && outbox.to['plant.created'].length > 0) {
        await outbox.tablesMade()
        // Made for every plant of the batch; only those of the rows inserted are stored.
        const at = new Date()
        const { payloads } = outbox.options
        values.push(plants.map((plant) => payloads.created(plant, at)), plants.map(() => payloads.messageId()), at, outbox.to['plant.created'])
      }
      result = await run((client, migration) => {
        used = migration
        return query<{ id: unknown }>(client, insertBatch.text, values, insertBatch.name)
      })
      // Compared as decimal text: whatever type the ids came back as, an id inserted is never taken for a 409.
      inserted = new Set(result.rows.map(({ id }) => String(id)))
      if (values.length > 3 && inserted.size > 0) outbox!.options.committed?.('plant.created', inserted.size)
    } catch (error) {
      const failure = error as PostgresFailure
      // A row that another transaction holds made the whole statement give up: each row alone, so
      // that only its own creates wait for it (and fail, if it is still held).
      if (failure.where === 'wait' && groups.length > 1) {
        await Promise.all(groups.map((group) => insertGroups([group])))
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
        taken = await answered(async (client) => {
          await checkShape(client, name)
          const { rows } = await query<{ id: unknown }>(client, `SELECT id FROM ${tableSql} WHERE id = ANY($1::int8[])`, [missing])
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
        : failure ?? new StoreUnavailableError({ cause: new Error(`PostgreSQL stored nothing for id ${id}, and returned no error`) })
      if (inserted.has(id)) first.resolve(toPlant(first.plant.name, first.plant.tag))
      else first.reject(answer)
      for (const { reject } of repeats) reject(answer)
    }
    // The rows are in, and answered as such; the table is checked after (its failure is logged there).
    await checkIds(result, used!)?.catch(ignore)
  }

  // Group commit, as for SQLite: the creates of one event-loop turn reach the database as one
  // INSERT, so they share one round trip and one WAL flush. The database's own primary key
  // decides: an id it did not insert is taken (409) once read back. A repeat of an id within the
  // batch waits for the verdict on the first.
  let pending: PendingCreate[] = []
  function insertPending () {
    const batch = pending
    pending = []
    const groups = new Map<bigint, PendingCreate[]>()
    for (const create of batch) {
      const same = groups.get(create.plant.id)
      if (same) same.push(create)
      else groups.set(create.plant.id, [create])
    }
    return insertGroups([...groups.values()])
  }

  return {
    create: (plant: NewPlant) => new Promise<Plant>((resolve, reject) => {
      if (pending.length === 0) setImmediate(insertPending)
      pending.push({ plant, resolve, reject })
    }),
    async get (id: bigint) {
      const { rows: [row] } = await answered((client) => query<PlantRow>(client, `SELECT name, tag FROM ${tableSql} WHERE id = $1`, [id]))
      return row && toPlant(row.name, row.tag)
    },
    async list ({ after, limit }: ListOptions) {
      let used: Promise<void>
      const result = await answered((client, migration) => {
        used = migration
        return after === undefined
          ? query<PlantRow>(client, `SELECT id, name, tag FROM ${tableSql} ORDER BY id LIMIT $1`, [limit])
          : query<PlantRow>(client, `SELECT id, name, tag FROM ${tableSql} WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit])
      })
      await checkIds(result, used!)
      return result.rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
    },
    async delete (id: bigint) {
      if (outbox === undefined || outbox.to['plant.deleted'].length === 0) {
        const { rowCount } = await answered((client) => query(client, `DELETE FROM ${tableSql} WHERE id = $1`, [id]))
        return rowCount === 1
      }
      const at = new Date()
      const { payloads, committed } = outbox.options
      const { deleteSql, to } = outbox
      await outbox.tablesMade().catch((error: unknown) => { throw answerFor(error as PostgresFailure) })
      const { rowCount } = await answered((client) => query(client, deleteSql, [id, payloads.messageId(), payloads.deleted(id, at), at, to['plant.deleted']]))
      if (rowCount === 1) committed?.('plant.deleted', 1)
      return rowCount === 1
    },
    async openOutbox (outboxOptions: OutboxOptions) {
      const tables = outboxTables(name)
      const endpointNames = outboxOptions.endpoints.map(({ name }) => name)
      // Made now when the server answers; while it is down, by the first operation that needs them.
      let made: Promise<void> | undefined
      const tablesMade = () => {
        made ??= run((client) => createOutboxTables(client, tables, name, endpointNames)).catch((error: unknown) => {
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
        return answered((client) => query<R>(client, text, values, statement))
      }
      const subscribers = (type: OutboxEventType) => outboxOptions.endpoints.filter(({ events }) => events.includes(type)).map(({ name }) => name)
      outbox = {
        options: outboxOptions,
        to: { 'plant.created': subscribers('plant.created'), 'plant.deleted': subscribers('plant.deleted') },
        tables,
        deleteSql: '',
        tablesMade
      }
      nameStatements()
      return postgresOutbox(tables, runQuery, outboxOptions)
    },
    async ping () {
      // A probe looks at the table again at once, rather than repeat an unusable one's verdict.
      if (unusable !== undefined) migration = undefined
      await answered(async (client) => {
        const { rows: [{ writable }] } = await query<{ writable: boolean }>(client, ping)
        // Thrown inside, so that the read-only session is closed rather than pooled.
        if (!writable) throw new PostgresFailure('write', new Error('the database is read-only'))
        await checkShape(client, name)
      })
    },
    async close () {
      // A shared pool is its owner's to end.
      if (!shared && !pool.ending) await pool.end()
    }
  }
}
