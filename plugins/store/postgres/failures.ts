import pg from 'pg'
import { StoreUnavailableError } from '../../http/errors.js'
import { FENCE_SQLSTATE } from './schema-version.js'

/**
 * Where a PostgreSQL operation failed, which decides what the store does:
 * - `connection`: it could not get or keep a connection (the server down, unreachable or silent,
 *   the database refusing connections or dropped, the session ended): 503;
 * - `write`: connected, but the database cannot carry out a change (read-only as a standby after a
 *   failover, out of disk, an I/O error): 503, and the session is not reused;
 * - `wait`: it gave up waiting (lock_timeout, a deadlock, statement_timeout): 503, or another try;
 * - `schema`: the table or its schema is gone: the migration runs again;
 * - `table`: the table is there but not one the store can use (a column renamed or retyped, the
 *   primary key dropped, a privilege revoked; see table.ts): 503 until it is fixed;
 * - `session`: the session's prepared statements are not the ones the driver holds (lost to a
 *   pooler's DISCARD ALL or a DEALLOCATE, or planned for a table changed since): the connection is
 *   closed and the operation tried once more on another.
 * - `refused`: the server refused the statement for a reason of its own (another unique index, a
 *   row-level security policy, a trigger that raises): whoever else changed the table, not the
 *   client, so 503, and the table is checked again (which names what is wrong).
 * - `newer`: a newer release upgraded the schema (the fence refused a write, or a check found its
 *   version): refused at start; while running, every operation is refused from then on (503).
 * A failure that is not the server's answer (the store's own code), or a value the server cannot
 * keep, is a bug: a 500.
 */
export type Where = 'connection' | 'write' | 'wait' | 'schema' | 'table' | 'session' | 'refused' | 'newer'

// What the server's own ERROR answers say, by SQLSTATE class or code.
const ANSWERS: ReadonlyArray<[RegExp, Where]> = [
  // Transaction rollback (deadlock, serialization), lock not available, statement cancelled.
  [/^(40|55P03$|57014$)/, 'wait'],
  // A read-only transaction, insufficient resources, a system (I/O) error.
  [/^(25006$|53|58)/, 'write'],
  // Undefined table, invalid schema name.
  [/^(42P01|3F000)$/, 'schema'],
  // No such prepared statement, one of that name already, a cached plan that no longer fits.
  [/^(26000|42P05|0A000)$/, 'session'],
  // Connection exception, operator intervention, the database gone or closed to connections.
  [/^(08|57P|3D000$|55000$)/, 'connection']
]

// pg's words (there is no code) when the URL asks for TLS (sslmode=require…) and the server has none.
const NO_TLS = 'The server does not support SSL connections'
/** What the log and the start-up refusal say instead: why, and what to change. */
export const NO_TLS_MESSAGE = 'the PostgreSQL server does not support TLS, which the URL asks for (sslmode): ' +
  'enable TLS on the server, or remove sslmode from DATABASE_URL (or set sslmode=disable)'

/** A failure of the store's own making or classified from the driver's: `where` undefined is a bug. */
export class PostgresFailure extends Error {
  override name = 'PostgresFailure'
  constructor (readonly where: Where | undefined, cause: unknown) {
    super('a PostgreSQL operation failed', { cause })
  }
}

/**
 * Where `error` happened, given that it came while connecting or using a connection, and whether
 * that connection was lost meanwhile (the client reported an error or its end).
 */
export function locateFailure (error: unknown, connecting: boolean, lost: boolean): PostgresFailure {
  if (error instanceof PostgresFailure) return error
  if ((error as Error | undefined)?.message === NO_TLS) return new PostgresFailure('connection', new Error(NO_TLS_MESSAGE, { cause: error }))
  if (connecting || lost) return new PostgresFailure('connection', error)
  if (!(error instanceof pg.DatabaseError)) return new PostgresFailure(undefined, error)
  // FATAL or PANIC: the server ends the session, whatever the code says.
  if (error.severity !== 'ERROR') return new PostgresFailure('connection', error)
  const code = String(error.code)
  if (code === FENCE_SQLSTATE) return new PostgresFailure('newer', error)
  // A value the server cannot keep (class 22, e.g. U+0000 in text) is one the API refuses before
  // the store sees it: reaching the store, it is the caller's bug.
  if (code.startsWith('22')) return new PostgresFailure(undefined, error)
  return new PostgresFailure(ANSWERS.find(([pattern]) => pattern.test(code))?.[1] ?? 'refused', error)
}

/** An error at start-up that says a setting is wrong, rather than that the database is away. */
export function isSettingError ({ where, cause }: PostgresFailure): boolean {
  // The migration refused for a reason other than an outage (permission denied...), or the table
  // there is not one the store can use.
  if (where === undefined || where === 'table' || where === 'refused' || where === 'newer') return true
  // The server answered that it has no TLS: it will not have it in a moment either.
  if ((cause as Error).message === NO_TLS_MESSAGE) return true
  const code = String((cause as { code?: unknown }).code)
  // The credentials refused or no database of that name; or Node refused an argument from the URL
  // (ERR_SOCKET_BAD_PORT...), where an outage has a system error code (ECONNREFUSED...) or none.
  return cause instanceof pg.DatabaseError ? /^(28|3D000$)/.test(code) : code.startsWith('ERR_')
}

/** What a failure means to a client: 503 when the store could not answer, the error itself for a bug or a newer schema. */
export function answerFor (failure: PostgresFailure): Error {
  return failure.where === undefined || failure.where === 'newer' ? failure.cause as Error : new StoreUnavailableError({ cause: failure.cause })
}
