import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { reasonOf, ServiceOverloadedError, StoreUnavailableError } from '../../plugins/http/errors.js'
import errorHandler from '../../plugins/http/error-handler.js'
import { collectLogs } from '../helpers/plugin-app.js'
import { fakeClock } from '../helpers/fake-clock.js'

/** A bare app with the error handler on a clock of the test's, whose route throws `failure()`. */
async function appFailingWith (t: Test, failure: () => unknown) {
  const clock = fakeClock()
  const { lines, logger } = collectLogs('info')
  const app = Fastify({ logger })
  await app.register(errorHandler, { schedule: clock.schedule })
  app.get('/', async () => { throw failure() })
  t.teardown(() => app.close())
  const requests = async (count: number) => {
    const statuses = new Set<number>()
    for (let i = 0; i < count; i++) statuses.add((await app.inject('/')).statusCode)
    t.same([...statuses], [503], `${count} requests: 503`)
  }
  return { app, clock, lines, requests }
}

const failures = (lines: Array<Record<string, unknown>>) => lines.filter(({ msg }) => String(msg).startsWith('request failed'))

t.test('a known fault is one line without a stack; its repeats are summed up once an interval, with their count', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  const { clock, lines, requests } = await appFailingWith(t, () => new StoreUnavailableError({ cause: refused }))
  await requests(100)
  t.match(failures(lines), [{
    level: 40, reqId: String, code: 'PLANT_STORE_UNAVAILABLE', reason: 'The plant store is unavailable, try again later: connect ECONNREFUSED 127.0.0.1:5432', msg: 'request failed'
  }], '100 failures: one line')
  t.notOk(JSON.stringify(lines).includes('stack'), 'no stack')
  t.notOk('err' in failures(lines)[0], 'no error object to serialize')

  clock.runAll()
  t.match(failures(lines).slice(1), [{ level: 40, code: 'PLANT_STORE_UNAVAILABLE', repeated: 99, reason: /ECONNREFUSED/, msg: 'request failed 99 more times' }],
    'an interval later, a summary counts the 99 others')
  await requests(10)
  t.equal(failures(lines).length, 2, 'the repeats after a summary wait for the next one')
  clock.runAll()
  t.match(failures(lines)[2], { repeated: 10 }, 'which counts them')
  clock.runAll()
  t.equal(failures(lines).length, 3, 'an interval without a repeat: nothing more')
  t.equal(clock.pending(), 0, 'and no timer left')

  await requests(1)
  t.match(failures(lines)[3], { msg: 'request failed', reqId: String }, 'the fault coming back is a line again')
})

t.test('each kind of known fault has its own line; what is not summed up at close is, then', async (t) => {
  let overloaded = false
  const { app, clock, lines, requests } = await appFailingWith(t, () => overloaded ? new ServiceOverloadedError() : new StoreUnavailableError())
  await requests(3)
  overloaded = true
  await requests(5)
  t.match(failures(lines), [{ code: 'PLANT_STORE_UNAVAILABLE', reason: 'The plant store is unavailable, try again later' },
    { code: 'PLANT_STORE_OVERLOADED', reason: 'The service is overloaded, try again later' }])
  await app.close()
  t.match(failures(lines).slice(2), [{ code: 'PLANT_STORE_UNAVAILABLE', repeated: 2 }, { code: 'PLANT_STORE_OVERLOADED', repeated: 4 }],
    'closing sums up the repeats not yet told')
  t.equal(clock.pending(), 0, 'and stops the timers')
})

t.test('a 503 that is not the plugin\'s, and a bug, are logged with their error, one by one', async (t) => {
  let bug = false
  const { app, lines } = await appFailingWith(t, () => bug ? new Error('a bug') : Object.assign(new Error('maintenance'), { statusCode: 503 }))
  for (let i = 0; i < 2; i++) t.equal((await app.inject('/')).statusCode, 503)
  bug = true
  t.equal((await app.inject('/')).statusCode, 500)
  t.match(failures(lines), [
    { level: 40, err: { message: 'maintenance', stack: String } },
    { level: 40, err: { message: 'maintenance' } },
    { level: 50, err: { message: 'a bug', stack: String } }
  ])
})

t.test('the reason is each message down the causes, in one line', async (t) => {
  // What a connect to a host name with two addresses rejects with: no message of its own.
  const aggregate = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' })
  t.equal(reasonOf(new StoreUnavailableError({ cause: aggregate })), 'The plant store is unavailable, try again later: ECONNREFUSED')
  t.equal(reasonOf(new Error('', { cause: new Error('why') })), 'Error: why', 'neither message nor code: the name')
  const looped = new Error('loop')
  looped.cause = looped
  t.equal(reasonOf(looped), 'loop', 'a cause that loops is said once')
  t.equal(reasonOf(new Error('top', { cause: 'a string' })), 'top', 'a cause that is not an error is left out')
})
