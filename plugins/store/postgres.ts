import pg from 'pg'
import type { NewPlant, Plant } from '../../schemas/index.js'
import { PlantExistsError, StoreUnavailableError } from '../http-errors.js'
import { classify, isSettingError, PostgresFailure } from './postgres-failures.js'
import { toPlant, type ListOptions, type PlantStore } from './types.js'

// Each entry takes the schema from the previous version to the next; plant_store_schema counts them.
// IF NOT EXISTS: a table restored without its plant_store_schema row (pg_dump -t plants) is adopted.
const MIGRATIONS = [
  'CREATE TABLE IF NOT EXISTS plants (id int8 PRIMARY KEY, name text NOT NULL, tag text)'
]

// Connecting (or waiting for a pooled connection) and each statement are bounded, so that a
// request fails with 503 within about 2 s when the server is down, unreachable or stuck. The
// server cancels a slow statement first, which keeps the connection; our own deadline is the
// backstop for a server that does not answer at all.
const CONNECT_TIMEOUT_MS = 1000
const STATEMENT_TIMEOUT_MS = 800
const QUERY_TIMEOUT_MS = 1000
// A row another transaction holds (an insert of the same id not yet committed) is waited for this
// long: far longer than another instance's commit takes, short enough to try each row of a batch
// alone after it and still answer within the bound above.
const LOCK_TIMEOUT_MS = 300
// A migration is a few statements, some of which wait for another instance's migration.
const MIGRATION_TIMEOUT_MS = 5000

const INT8_OID = pg.types.builtins.INT8

interface PlantRow { id: bigint, name: string, tag: string | null }

interface PendingCreate {
  plant: NewPlant
  resolve: (plant: Plant) => void
  reject: (error: unknown) => void
}

// In ascending id order: batches take their row locks in one order, so that none can wait for
// another while holding a row the other waits for (a deadlock).
const INSERT_BATCH = `INSERT INTO plants (id, name, tag)
  SELECT * FROM unnest($1::int8[], $2::text[], $3::text[]) ORDER BY 1
  ON CONFLICT (id) DO NOTHING RETURNING id`
const INSERT_BATCH_NAME = 'plant-store-insert-batch'

// Reading the table's columns finds it gone (and has it made again) or changed (a column renamed
// or dropped, which no request could use). A read-only database (a standby after a failover)
// answers reads but refuses every create: it is not ready.
const PING = `SELECT current_setting('transaction_read_only') = 'off' AS writable,
  EXISTS (SELECT id, name, tag FROM plants) AS readable`

// A pooled client's socket failure is also emitted as 'error': unheard, that would crash the process.
function ignore () {}

/**
 * Runs `work` on a pooled connection within `timeout` ms, and classifies a failure by where it
 * happened (see Where). The connection is reused after a failure only when the server answered it
 * and the session is in a known state; otherwise the pool closes it.
 */
async function withClient<R> (
  pool: pg.Pool, work: (client: pg.PoolClient) => Promise<R>, timeout = QUERY_TIMEOUT_MS
): Promise<R> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw classify(error, true, false)
  }
  let lost = false
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
    const reusable = error instanceof pg.DatabaseError && (failure.where === 'wait' || failure.where === undefined)
    client.release(!reusable)
    throw failure
  }
}

function migrate (pool: pg.Pool) {
  return withClient(pool, async (client) => {
    await client.query('BEGIN')
    // Instances starting together take turns; the lock ends with the transaction.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('plant-store migrations'))")
    await client.query('CREATE TABLE IF NOT EXISTS plant_store_schema (version integer NOT NULL)')
    const { rows } = await client.query<{ version: number, present: boolean }>(
      "SELECT version, to_regclass('plants') IS NOT NULL AS present FROM plant_store_schema")
    if (rows.length === 0) await client.query('INSERT INTO plant_store_schema (version) VALUES (0)')
    // The table dropped since: the schema is built again from the start.
    const version = rows[0]?.present ? rows[0].version : 0
    for (let next = version; next < MIGRATIONS.length; next++) await client.query(MIGRATIONS[next])
    if (version < MIGRATIONS.length) {
      await client.query('UPDATE plant_store_schema SET version = $1', [MIGRATIONS.length])
    }
    await client.query('COMMIT')
  }, MIGRATION_TIMEOUT_MS)
}

/** What a failure means to a client: 503 when the store could not answer, the error itself for a bug. */
function answerFor (failure: PostgresFailure): Error {
  return failure.where === undefined ? failure.cause as Error : new StoreUnavailableError({ cause: failure.cause })
}

/**
 * A store in a PostgreSQL database, shared by any number of service instances. It resolves even
 * when the server is down: the table is then created by the first operation that reaches it.
 * A create resolves after COMMIT, which with PostgreSQL's default synchronous_commit=on means the
 * row is flushed to the write-ahead log on stable storage.
 */
export async function openPostgresStore (url: string): Promise<PlantStore> {
  const pool = new pg.Pool({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    lock_timeout: LOCK_TIMEOUT_MS,
    // int8 as an exact BigInt for this pool only: pg.types.setTypeParser would change a host app's pg too.
    types: {
      getTypeParser: (oid, format) =>
        oid === INT8_OID && format !== 'binary' ? BigInt : pg.types.getTypeParser(oid, format)
    }
  })
  // The pool drops a broken idle connection and opens another when needed; without a listener,
  // a connection the server closes (restart, failover) would crash the process.
  pool.on('error', ignore)

  let migration: Promise<void> | undefined
  const migrated = () => {
    migration ??= migrate(pool).catch((error) => {
      migration = undefined
      throw error
    })
    return migration
  }

  /**
   * Runs `work` once the schema is there. Once more when the table or schema turns out gone
   * (after migrating again) or the session's prepared statements were not what the driver held
   * (on another connection: withClient closed that one).
   */
  async function run<R> (work: (client: pg.PoolClient) => Promise<R>, again = true): Promise<R> {
    const used = migrated()
    await used
    try {
      return await withClient(pool, work)
    } catch (error) {
      const { where } = error as PostgresFailure
      if (!again || (where !== 'schema' && where !== 'session')) throw error
      if (where === 'schema' && migration === used) migration = undefined // unless a failure seen earlier did so already
      return run(work, false)
    }
  }

  /** `run`, with a failure turned into what it means to a client. */
  async function answered<R> (work: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    try {
      return await run(work)
    } catch (error) {
      throw answerFor(error as PostgresFailure)
    }
  }

  // Bind ids as BigInt: pg sends them as their exact decimal text.
  const query = <R extends pg.QueryResultRow> (text: string, values: unknown[] = []) =>
    answered((client) => client.query<R>(text, values))

  try {
    await migrated()
  } catch (error) {
    // A server that is down is retried by the first operation; a setting to fix is refused now.
    if (isSettingError(error as PostgresFailure)) {
      await pool.end()
      throw (error as PostgresFailure).cause
    }
  }

  /**
   * Inserts the first plant of each group (the creates of one id) and settles every create: the
   * first resolves when its row is inserted; the others are 409 once the id is stored (by it or
   * before), and share the failure when the insert failed.
   */
  async function insertGroups (groups: PendingCreate[][]): Promise<void> {
    const plants = groups.map(([first]) => first.plant)
    let inserted: Set<bigint>
    try {
      // A named statement: each connection parses and plans it once (~10 % more creates per second
      // in the bench, beside pgbench's INSERT).
      const values = [plants.map(({ id }) => id), plants.map(({ name }) => name), plants.map(({ tag }) => tag ?? null)]
      const { rows } = await run((client) => client.query<{ id: bigint }>({ name: INSERT_BATCH_NAME, text: INSERT_BATCH, values }))
      inserted = new Set(rows.map(({ id }) => id))
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
    for (const [first, ...repeats] of groups) {
      if (inserted.has(first.plant.id)) first.resolve(toPlant(first.plant.name, first.plant.tag))
      else first.reject(new PlantExistsError())
      for (const { reject } of repeats) reject(new PlantExistsError())
    }
  }

  // Group commit, as for SQLite: the creates of one event-loop turn reach the database as one
  // INSERT, so they share one round trip and one WAL flush. The database's own primary key
  // decides: an id it did not insert is taken (409). A repeat of an id within the batch waits
  // for the verdict on the first.
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
      const { rows: [row] } = await query<PlantRow>('SELECT name, tag FROM plants WHERE id = $1', [id])
      return row && toPlant(row.name, row.tag)
    },
    async list ({ after, limit }: ListOptions) {
      const { rows } = after === undefined
        ? await query<PlantRow>('SELECT id, name, tag FROM plants ORDER BY id LIMIT $1', [limit])
        : await query<PlantRow>('SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2', [after, limit])
      return rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
    },
    async delete (id: bigint) {
      const { rowCount } = await query('DELETE FROM plants WHERE id = $1', [id])
      return rowCount === 1
    },
    async ping () {
      await answered(async (client) => {
        const { rows: [{ writable }] } = await client.query<{ writable: boolean }>(PING)
        // Thrown inside, so that the read-only session is closed rather than pooled.
        if (!writable) throw new PostgresFailure('write', new Error('the database is read-only'))
      })
    },
    async close () {
      if (!pool.ending) await pool.end()
    }
  }
}
