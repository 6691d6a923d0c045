import pg from 'pg'
import t from 'tap'
import { locateFailure, isSettingError } from '../../plugins/store/postgres/failures.js'

// The faults themselves are made on a real server in postgres-faults.test.ts and
// store-contract.test.ts; these are the answers no fault made there reaches reliably.

const serverError = (code: string, severity: string) => Object.assign(new pg.DatabaseError('x', 1, 'error'), { code, severity })

t.test('a FATAL answer during a statement ends the session: a connection failure whatever its code', async (t) => {
  t.equal(locateFailure(serverError('57P01', 'FATAL'), false, false).where, 'connection', 'terminated by an administrator')
  t.equal(locateFailure(serverError('XX000', 'PANIC'), false, false).where, 'connection', 'a server crash')
})

t.test('a session whose prepared statements are not what the driver holds is a session failure: tried again elsewhere', async (t) => {
  t.equal(locateFailure(serverError('26000', 'ERROR'), false, false).where, 'session', 'no such prepared statement')
  t.equal(locateFailure(serverError('42P05', 'ERROR'), false, false).where, 'session', 'a prepared statement of that name already')
  t.equal(locateFailure(serverError('0A000', 'ERROR'), false, false).where, 'session', 'a cached plan that no longer fits the table')
})

t.test('an error of our own code while using a connection that is still there is a bug', async (t) => {
  t.equal(locateFailure(new TypeError('not a function'), false, false).where, undefined)
  t.equal(locateFailure(new TypeError('not a function'), false, true).where, 'connection', 'unless the connection was lost')
})

t.test('at start-up, only what a setting can fix is refused', async (t) => {
  const atStart = (error: unknown) => isSettingError(locateFailure(error, true, false))
  t.ok(atStart(serverError('28P01', 'FATAL')), 'a password refused')
  t.ok(atStart(serverError('3D000', 'FATAL')), 'no such database')
  t.ok(atStart(Object.assign(new RangeError('bad port'), { code: 'ERR_SOCKET_BAD_PORT' })), 'a port out of range')
  t.notOk(atStart(serverError('55000', 'FATAL')), 'a database closed to connections for now')
  t.notOk(atStart(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })), 'a server down')
  t.notOk(atStart(new Error('timeout exceeded when trying to connect')), 'a server that does not answer')
  t.ok(isSettingError(locateFailure(serverError('42501', 'ERROR'), false, false)), 'the migration refused: permission denied')
})
