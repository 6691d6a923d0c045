import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, type Stats } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import Database, { SqliteError } from 'better-sqlite3'
import type { NewPlant, Plant } from '../../../schemas/index.js'
import { every, systemClock, type Clock } from '../../http/clock.js'
import { PlantExistsError, StoreUnavailableError } from '../../http/errors.js'
import type { OutboxOptions, OutboxStore } from '../outbox.js'
import { DEFAULT_DATABASE_URL, sqliteFileOf, sqliteFiles } from './files.js'
import { pathNow } from './moved.js'
import { GroupCommit, type PendingCreate, type Settles } from '../group-commit.js'
import { openSqliteOutbox } from './outbox.js'
import { migrate, SQLITE_SCHEMA_VERSION } from './schema-version.js'
import { refusalWhileRunning, SchemaWatch } from '../schema-version.js'
import { firstRevision, revised, satisfies } from '../revision.js'
import { noLog, toPlant, type ListOptions, type PlantStore, type StoreLog, type UpdateResult, type WritePrecondition } from '../types.js'

// The file cannot be written or reached for now (locked, read-only, disk full, I/O error): the
// client may retry later. Anything else, such as a corrupt file, is a 500.
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|READONLY|IOERR|FULL|CANTOPEN|PROTOCOL)/

// better-sqlite3 is synchronous: a busy_timeout would wait for another process's lock with the
// event loop blocked, and every request with it. A statement fails at once instead and is tried
// again between turns of the loop, for up to BUSY_WAIT_MS before its request gets 503. The first
// waits are short: the delivery thread's bookkeeping holds the lock for well under a millisecond.
const BUSY_WAIT_MS = 250
// A bookkeeping connection (the delivery thread's) keeps trying longer: no request waits for its
// writes, and a result given up is a delivery sent again once its lease runs out. Under a sustained
// full load of creates the thread that serves HTTP holds the lock nearly all the time: with 250 ms,
// about 3 % of a 30 s run's deliveries were sent twice.
const BOOKKEEPING_BUSY_WAIT_MS = 5000
const BUSY_RETRY_MS = [1, 2, 5, 10]
// Opening happens before the service takes requests: there, blocking for the lock is harmless.
const OPEN_BUSY_TIMEOUT_MS = 1000

// The write-ahead log is checkpointed (copied into the database) as it grows, but it cannot start
// over while another connection reads an older snapshot: then it keeps growing. Past this size, a
// timer tries a TRUNCATE checkpoint every WAL_CHECK_MS, which succeeds once readers allow; and
// SQLite itself truncates it back to this size when it starts over (journal_size_limit).
export const WAL_LIMIT_BYTES = 4 * 1024 * 1024
export const WAL_CHECK_MS = 1000
// A bookkeeping connection (the delivery thread's) also checkpoints the log this often, for an API
// connection that leaves checkpoints to it (OutboxOptions.checkpointedElsewhere). PASSIVE: it waits
// for no one, and copies what no reader still needs.
export const BOOKKEEPING_CHECKPOINT_MS = 250
export const CHECKPOINT_PASSES = 4

/**
 * A PASSIVE checkpoint (it waits for no one), passed again while the commits made during a pass
 * left frames uncopied, at most CHECKPOINT_PASSES times: each pass copies only what the last left,
 * in far less time, and once the log is copied whole the next commit starts it over instead of
 * growing it past WAL_LIMIT_BYTES (which the API connection's timer would then copy and truncate,
 * on the thread that serves HTTP). Frames a reader's snapshot still needs stay. Returns the passes.
 */
export function catchUpCheckpoint (db: Database.Database): number {
  let passes = 0
  for (;;) {
    passes++
    const [{ log, checkpointed }] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number, checkpointed: number }>
    if (checkpointed >= log || passes === CHECKPOINT_PASSES) return passes
  }
}

interface PlantRow { id: bigint, name: string, tag: string | null }
interface RevisedRow { name: string, tag: string | null, revision: bigint }

/**
 * The database's folder must be there: a missing one is taken for a mistyped path, which would
 * otherwise start the service on a new, empty database. Only the default's ./data is made.
 */
function ensureFolder (file: string) {
  const folder = dirname(file)
  if (statOf(folder) !== undefined) return
  if (file !== sqliteFileOf(DEFAULT_DATABASE_URL)) throw new Error(`the folder ${folder} does not exist: create it, or correct the path`)
  mkdirSync(folder)
}

// A new file's directory entry must reach the disk too, or a power cut can lose the whole file.
function syncDirectory (directory: string) {
  const fd = openSync(directory, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function translate (error: unknown): unknown {
  if (!(error instanceof SqliteError)) return error
  if (error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new PlantExistsError()
  if (UNAVAILABLE_CODES.test(error.code)) return new StoreUnavailableError({ cause: error })
  return error
}

const isBusy = (error: unknown) => error instanceof SqliteError && error.code.startsWith('SQLITE_BUSY')

/** Runs `operation`, again after each wait of BUSY_RETRY_MS (the last one repeated) while another connection holds the lock it needs, for `waitMs` at most. */
async function retriedWhileBusy<R> (operation: () => R, waitMs: number): Promise<R> {
  const deadline = performance.now() + waitMs
  let retry = 0
  // for (;;), not a loop with an update: V8 counts the unreachable end of such a loop as a line never run.
  for (;;) {
    try {
      return operation()
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error
    }
    await sleep(BUSY_RETRY_MS[Math.min(retry++, BUSY_RETRY_MS.length - 1)])
  }
}

/** The file at `path` now, or undefined when there is none. */
function statOf (path: string): Stats | undefined {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}

const isSame = (now: Stats | undefined, opened: Stats) => now !== undefined && now.ino === opened.ino && now.dev === opened.dev

/** Opens (and makes, when missing, in a folder that must exist but for the default's) the database file: WAL, fsync on every commit, exact int64 ids. */
// A new file switched to WAL by two processes at once: SQLite refuses one at once (busy, its
// handler not called where waiting could deadlock); it tries again after these pauses.
const WAL_SWITCH_RETRY_MS = [5, 10, 25, 50, 100, 250]

/** Switches `db` to WAL, trying again after each of `pauses` while it is busy. */
export function switchToWal (db: Pick<Database.Database, 'pragma'>, pauses = WAL_SWITCH_RETRY_MS) {
  for (const pause of pauses) {
    try {
      db.pragma('journal_mode = WAL')
      return
    } catch (error) {
      if (!isBusy(error)) throw error
      // Opening happens before the service takes requests: blocking for the pause is harmless.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause)
    }
  }
  // The last try: its failure is the open's.
  db.pragma('journal_mode = WAL')
}

function openDatabase (file: string): Database.Database {
  ensureFolder(file)
  const db = new Database(file)
  try {
    // First: the switch to WAL takes a lock that another process opening the file at once may hold.
    db.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`)
    switchToWal(db)
    // Set after the switch to WAL, whose own default would be weaker.
    db.pragma('synchronous = FULL')
    // Without this, ids past 2^53 are read back rounded, silently.
    db.defaultSafeIntegers(true)
    db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`)
    migrate(db)
    syncDirectory(dirname(file))
    db.pragma('busy_timeout = 0')
  } catch (error) {
    db.close()
    throw error
  }
  return db
}

function prepareStatements (db: Database.Database) {
  return {
    insert: db.prepare<[bigint, string, string | null, number]>('INSERT INTO plants (id, name, tag, revision) VALUES (?, ?, ?, ?)'),
    select: db.prepare<[bigint], RevisedRow>('SELECT name, tag, revision FROM plants WHERE id = ?'),
    firstPage: db.prepare<[number], PlantRow>('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?'),
    nextPage: db.prepare<[bigint, number], PlantRow>('SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?'),
    // (tag, id): the index plants_tag_id walks it in order.
    firstTagPage: db.prepare<[string, number], PlantRow>('SELECT id, name, tag FROM plants WHERE tag = ? ORDER BY id LIMIT ?'),
    nextTagPage: db.prepare<[string, bigint, number], PlantRow>('SELECT id, name, tag FROM plants WHERE tag = ? AND id > ? ORDER BY id LIMIT ?'),
    update: db.prepare<[string, string | null, bigint, bigint]>('UPDATE plants SET name = ?, tag = ?, revision = ? WHERE id = ?'),
    // An update without a precondition: one statement, which finds the plant and writes it.
    updateAny: db.prepare<[string, string | null, bigint], bigint>('UPDATE plants SET name = ?, tag = ?, revision = revision + 1 WHERE id = ? RETURNING revision').pluck(),
    remove: db.prepare<[bigint]>('DELETE FROM plants WHERE id = ?'),
    // Read in each write transaction: a newer release's upgrade, committed before it, is seen.
    version: db.prepare<[], unknown>('PRAGMA user_version').pluck(),
    // Readiness is whether a create could write: a write lock taken and given back at once. A -shm
    // or a database file that cannot be written answers reads but refuses this.
    begin: db.prepare('BEGIN IMMEDIATE'),
    rollback: db.prepare('ROLLBACK')
  }
}

/**
 * The files the store opened: the database, its -wal and its -shm. A write to a file that was
 * removed or replaced since it was opened would be acknowledged and then lost: each write and each
 * ping compare the inodes at the paths with the ones opened (three stats are a few microseconds
 * beside a commit's fsync). Reads, which lose nothing, use the last verdict.
 */
class OpenedFiles {
  readonly paths: readonly string[]
  readonly #opened: Stats[]
  /** The last verdict: a file at a path is not the one opened. */
  lost = false
  #leftNothing = false
  readonly #stopWalChecks: () => void
  readonly #stopCheckpoints: (() => void) | undefined

  constructor (readonly file: string, readonly db: Database.Database, readonly log: StoreLog, checkpoints: boolean, clock: Clock) {
    this.paths = sqliteFiles(file)
    this.#opened = this.paths.map((path) => statSync(path))
    this.#stopWalChecks = every(clock, WAL_CHECK_MS, () => this.#truncateWal())
    if (checkpoints) this.#stopCheckpoints = every(clock, BOOKKEEPING_CHECKPOINT_MS, () => this.#checkpoint())
  }

  assertKept () {
    const found = this.paths.map(statOf)
    const keptUntilNow = !this.lost
    this.lost = !found.every((now, i) => isSame(now, this.#opened[i]))
    if (!this.lost) return
    if (keptUntilNow) this.#keepAcknowledged()
    // Another file at one of the paths, or our log gone: ours can never be at the path again.
    const replaced = found.some((now, i) => now !== undefined && !isSame(now, this.#opened[i]))
    if (!this.#leftNothing && (replaced || found[1] === undefined)) this.#leaveNothingBehind()
    throw new StoreUnavailableError({ cause: new Error(`${this.file} (or its -wal or -shm) was removed or replaced while open`) })
  }

  /**
   * Once a file is not the one opened, the plants acknowledged must stay in a file the operator
   * can find: SQLite itself does not checkpoint a database moved while open, and its log, once
   * unlinked, would take them along. The log is copied into the database the store has open,
   * wherever it is now; when that has no name any more, into a copy beside the path; when the
   * log cannot be copied whole (a reader of another process holds an older snapshot), it goes
   * beside the moved database. The log says where.
   */
  #keepAcknowledged () {
    const { file, paths, db } = this
    const opened = this.#opened
    const atPath = isSame(statOf(file), opened[0])
    let copied = false
    try {
      // Moved away, its log is also emptied: left at the path, it would be laid over the next
      // database made there. At the path, the log is only copied, as before any move.
      const [{ log, checkpointed }] = db.pragma(`wal_checkpoint(${atPath ? 'FULL' : 'TRUNCATE'})`) as Array<{ log: number, checkpointed: number }>
      copied = checkpointed === log
    /* c8 ignore next 3: only a database that cannot be written (I/O error, disk full) lands here */
    } catch {
      // Said below: the log goes with the database.
    }
    let where = atPath ? file : pathNow(opened[0])
    if (where === undefined) {
      const copy = `${file}.recovered-${Date.now()}`
      try {
        db.prepare('VACUUM INTO ?').run(copy)
        where = copy
      } catch {
        // The folder is gone too: nowhere to write.
      }
    } else if (!copied && where !== file && isSame(statOf(paths[1]), opened[1])) {
      renameSync(paths[1], `${where}-wal`)
    }
    this.log.warn(`plant-store: the SQLite database ${file} (or its -wal or -shm) was moved, replaced or removed while open: ` +
      'creates and /readyz answer 503 until it is back or the service is restarted; ' +
      (where === undefined ? 'its plants could not be saved: its folder is gone' : `every plant acknowledged is in ${where}`))
  }

  /**
   * Once a file is not the one opened, what is still ours must not be applied to another: SQLite
   * reads whatever -wal and -shm lie beside a database as that database's, and would lay this
   * database's pages over a file moved in. Our -wal and -shm (their plants copied, above) are
   * removed from the path.
   */
  #leaveNothingBehind () {
    this.#leftNothing = true
    for (const [i, path] of this.paths.entries()) {
      try {
        if (i > 0 && isSame(statOf(path), this.#opened[i])) unlinkSync(path)
      /* c8 ignore next 3: only a removal between the stat and the unlink lands here */
      } catch {
        // Gone meanwhile.
      }
    }
  }

  // Checkpoints the log whole and truncates it, once no reader holds an older snapshot.
  #truncateWal () {
    const wal = statOf(this.paths[1])
    if (!isSame(wal, this.#opened[1]) || wal!.size <= WAL_LIMIT_BYTES) return
    try {
      // Readers in the way make it return busy, not throw.
      this.db.pragma('wal_checkpoint(TRUNCATE)')
    /* c8 ignore next 3: only a failing disk or a database moved away lands here */
    } catch {
      // The next tick tries again, and writes report the failure.
    }
  }

  #checkpoint () {
    try {
      catchUpCheckpoint(this.db)
    /* c8 ignore next 3: only a failing disk or a database moved away lands here */
    } catch {
      // The next tick tries again; the API's writes report the failure.
    }
  }

  stopWatching () {
    this.#stopWalChecks()
    this.#stopCheckpoints?.()
  }
}

/**
 * A store in one SQLite file, created with its folder on first use. WAL with synchronous=FULL
 * fsyncs every commit, so a create resolves only once the plant is on stable storage.
 * better-sqlite3 is synchronous: each statement, and each commit's fsync, holds the event loop.
 * Its operations are own properties, so that a host can spread the store into a wrapper.
 */
class SqliteStore implements PlantStore, OutboxStore {
  readonly #db: Database.Database
  readonly #statements: ReturnType<typeof prepareStatements>
  readonly #files: OpenedFiles
  readonly #commits = new GroupCommit<PendingWrite>((batch) => this.#commitBatch(batch))
  // Once webhooks are on, each plant's event is written in the plant's own transaction.
  #outbox: ReturnType<typeof openSqliteOutbox> | undefined
  #committed: NonNullable<OutboxOptions['committed']> = () => {}
  #traceContext: NonNullable<OutboxOptions['traceContext']> = () => undefined
  // What events are stamped with: the outbox's clock.
  #eventClock: Clock = systemClock
  // Per write: what it came to, or why it was not made (a create's id taken); and the events written, by type.
  readonly #writeBatch: (batch: PendingWrite[], at: number) => BatchWritten
  readonly #busyWaitMs: number
  readonly #schema: SchemaWatch
  readonly #file: string

  constructor (file: string, { log = noLog, bookkeeping = false, clock = systemClock }: SqliteStoreOptions) {
    const db = this.#db = openDatabase(file)
    this.#file = file
    this.#schema = new SchemaWatch(log)
    // Its commits are claims and results, not plants: in WAL they skip the fsync (they survive a
    // crash of the process, not of the machine, where a lost mark only sends again), so that it
    // holds the write lock a create waits for only microseconds. It checkpoints the log too.
    if (bookkeeping) db.pragma('synchronous = NORMAL')
    this.#busyWaitMs = bookkeeping ? BOOKKEEPING_BUSY_WAIT_MS : BUSY_WAIT_MS
    this.#statements = prepareStatements(db)
    this.#files = new OpenedFiles(file, db, log, bookkeeping, clock)
    this.#writeBatch = db.transaction((batch: PendingWrite[], at: number) => {
      this.#assertVersion()
      const events = { 'plant.created': 0, 'plant.updated': 0, 'plant.deleted': 0 }
      // The creates' events are written together, before any later write's: each plant's events stay in the order of its writes.
      let inserted: PendingCreate[] = []
      const writeCreated = () => {
        events['plant.created'] += this.#outbox?.created(inserted, at) ?? 0
        inserted = []
      }
      const results = batch.map((write) => {
        if (write.kind === 'create') {
          const revision = this.#insert(write.plant)
          if (typeof revision === 'number') inserted.push(write)
          return revision
        }
        writeCreated()
        const { result, event } = write.kind === 'update' ? this.#updateOne(write, at) : this.#removeOne(write, at)
        if (event) events[write.kind === 'update' ? 'plant.updated' : 'plant.deleted']++
        return result
      })
      writeCreated()
      return { results, events }
    }).immediate
  }

  /** Inserts a plant: its revision, or, for a taken id, the error of its own statement only (any other ends the whole transaction). */
  #insert ({ id, name, tag }: NewPlant): number | InstanceType<typeof SqliteError> {
    const revision = firstRevision()
    try {
      this.#statements.insert.run(id, name, tag ?? null, revision)
      return revision
    } catch (error) {
      if (error instanceof SqliteError && error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return error
      throw error
    }
  }

  // Read and written in the batch's IMMEDIATE transaction: no other connection writes between the two.
  #updateOne ({ id, plant, precondition, traceContext }: PendingUpdate, at: number): { result: UpdateResult, event: boolean } {
    const revision = precondition?.ifRevision === undefined ? this.#statements.updateAny.get(plant.name, plant.tag ?? null, id) : this.#updateIf(id, plant, precondition)
    if (typeof revision === 'string' || revision === undefined) return { result: revision ?? 'not-found', event: false }
    const event = this.#outbox?.updated({ id, ...plant }, at, traceContext) === true
    return { result: revised(toPlant(plant.name, plant.tag), revision), event }
  }

  /** An update under a precondition: the plant's new revision, or why it was not written. */
  #updateIf (id: bigint, plant: Plant, precondition: WritePrecondition): bigint | 'not-found' | 'precondition-failed' {
    const { select, update } = this.#statements
    const row = select.get(id)
    if (row === undefined) return 'not-found'
    if (!satisfies(String(row.revision), precondition)) return 'precondition-failed'
    update.run(plant.name, plant.tag ?? null, row.revision + 1n, id)
    return row.revision + 1n
  }

  #removeOne ({ id, precondition, traceContext }: PendingDelete, at: number): { result: boolean | 'precondition-failed', event: boolean } {
    const { select, remove } = this.#statements
    if (precondition?.ifRevision !== undefined) {
      const row = select.get(id)
      if (row !== undefined && !satisfies(String(row.revision), precondition)) return { result: 'precondition-failed', event: false }
    }
    const deleted = remove.run(id).changes > 0
    return { result: deleted, event: deleted && this.#outbox?.deleted(id, at, traceContext) === true }
  }

  /**
   * Inside a transaction, before it writes: throws once the file's version is not this release's
   * (a newer release upgraded it meanwhile), and from then on every operation does.
   */
  readonly #assertVersion = () => {
    const version = Number(this.#statements.version.get())
    const refusal = refusalWhileRunning(`the SQLite database ${this.#file}`, version, SQLITE_SCHEMA_VERSION, 'set PRAGMA user_version')
    if (refusal !== undefined) throw this.#schema.found(refusal)
  }

  readonly #read = async <R>(operation: () => R): Promise<R> => {
    try {
      this.#schema.assertKnown()
      if (this.#files.lost) this.#files.assertKept()
      return await retriedWhileBusy(operation, this.#busyWaitMs)
    } catch (error) {
      throw translate(error)
    }
  }

  /** Resolves once the write is committed to the file that is still at the path. */
  readonly #write = async <R>(operation: () => R): Promise<R> => {
    try {
      this.#schema.assertKnown()
      // Before: the -wal and -shm at the path may now be another file's. After: it may have gone meanwhile.
      this.#files.assertKept()
      const result = await retriedWhileBusy(operation, this.#busyWaitMs)
      this.#files.assertKept()
      return result
    } catch (error) {
      throw translate(error)
    }
  }

  async #commitBatch (batch: PendingWrite[]) {
    let written: BatchWritten
    try {
      written = await this.#write(() => this.#writeBatch(batch, this.#eventClock.now()))
    } catch (error) {
      // Rolled back, or committed to a file that is gone: no write of this batch is kept.
      for (const { reject } of batch) reject(error)
      return
    }
    batch.forEach((write, i) => {
      const result = written.results[i]
      if (write.kind !== 'create') write.resolve(result as never)
      else if (typeof result === 'number') write.resolve(revised(toPlant(write.plant.name, write.plant.tag), result))
      else write.reject(translate(result))
    })
    for (const [type, count] of Object.entries(written.events) as Array<[WrittenType, number]>) if (count > 0) this.#committed(type, count)
  }

  create = (plant: NewPlant) => this.#commits.add<Plant>((settles) => ({ kind: 'create', plant, traceContext: this.#traceContext(), ...settles }))

  get = (id: bigint) => this.#read(() => {
    const row = this.#statements.select.get(id)
    return row && revised(toPlant(row.name, row.tag), row.revision)
  })

  list = ({ after, limit }: ListOptions) => this.#read(() => {
    const { firstPage, nextPage } = this.#statements
    const rows = after === undefined ? firstPage.all(limit) : nextPage.all(after, limit)
    return rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
  })

  listTagged = (tag: string, { after, limit }: ListOptions) => this.#read(() => {
    const { firstTagPage, nextTagPage } = this.#statements
    const rows = after === undefined ? firstTagPage.all(tag, limit) : nextTagPage.all(tag, after, limit)
    return rows.map(({ id, name, tag }) => ({ id, ...toPlant(name, tag) }))
  })

  delete = (id: bigint, precondition?: WritePrecondition) =>
    this.#commits.add<boolean | 'precondition-failed'>((settles) => ({ kind: 'delete', id, precondition, traceContext: this.#traceContext(), ...settles }))

  update = (id: bigint, plant: Plant, precondition?: WritePrecondition) =>
    this.#commits.add<UpdateResult>((settles) => ({ kind: 'update', id, plant, precondition, traceContext: this.#traceContext(), ...settles }))

  openOutbox = async (options: OutboxOptions) => {
    this.#outbox = await this.#write(() => openSqliteOutbox(this.#db, { write: this.#write, read: this.#read, assertVersion: this.#assertVersion }, options))
    this.#committed = options.committed ?? this.#committed
    this.#traceContext = options.traceContext ?? this.#traceContext
    this.#eventClock = options.clock ?? systemClock
    // Its commits no longer copy the log into the database (and fsync it) on this thread.
    if (options.checkpointedElsewhere === true) this.#db.pragma('wal_autocheckpoint = 0')
    return this.#outbox.outbox
  }

  ping = () => this.#read(() => {
    this.#files.assertKept()
    this.#statements.begin.run()
    try {
      this.#assertVersion()
    } finally {
      this.#statements.rollback.run()
    }
  })

  close = async () => {
    this.#files.stopWatching()
    await this.#commits.drain()
    try {
      this.#files.assertKept()
    } catch {
      // Found lost only now: the files it left are ours to remove before SQLite closes.
    }
    this.#db.close()
  }
}

type WrittenType = 'plant.created' | 'plant.updated' | 'plant.deleted'
interface BatchWritten { results: unknown[], events: Record<WrittenType, number> }
interface PendingUpdate extends Settles<UpdateResult> {
  kind: 'update', id: bigint, plant: Plant, precondition: WritePrecondition | undefined, traceContext: string | undefined
}
interface PendingDelete extends Settles<boolean | 'precondition-failed'> {
  kind: 'delete', id: bigint, precondition: WritePrecondition | undefined, traceContext: string | undefined
}
/** A write waiting for its batch's commit: creates, updates and deletes share one transaction per turn of the loop. */
type PendingWrite = PendingCreate & { kind: 'create' } | PendingUpdate | PendingDelete

export interface SqliteStoreOptions {
  /** Where the store says what became of a database moved or replaced under it. */
  log?: StoreLog
  /** A connection that writes only the outbox's bookkeeping (the delivery thread's); it checkpoints the log. */
  bookkeeping?: boolean
  /** The clock of the store's timers, which check and checkpoint the log (default: the system clock). */
  clock?: Clock
}

export function openSqliteStore (path: string, options: SqliteStoreOptions = {}): PlantStore & Required<Pick<PlantStore, 'update' | 'listTagged'>> & OutboxStore {
  return new SqliteStore(resolve(path), options)
}
