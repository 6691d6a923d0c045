import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import healthRoutes from '../../routes/health.js'
import { sharedSchemas } from '../../schemas/index.js'
import storePlugin from '../../plugins/store/index.js'
import { NOT_READY, NOT_READY_AT_START, READY_AGAIN, readinessChanged } from '../../plugins/store/readiness.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { buildPlugin, collectLogs } from '../helpers/plugin-app.js'
import { accountedFor, readinessLines as readinessLogLines } from '../helpers/fault-log.js'
import type { LogLine } from '../helpers/server-process.js'
import { fakeClock } from '../helpers/fake-clock.js'

const UNAVAILABLE = { error: 503, message: new StoreUnavailableError().message }
const unavailable = (why: string) => new StoreUnavailableError({ cause: new Error(why) })

/** A memory store whose ping fails with `state.failure` while it is set. */
function switchableStore (failure?: unknown) {
  const state = { failure }
  const store = { ...createMemoryStore(), ping: async () => { if (state.failure !== undefined) throw state.failure } }
  return { state, store }
}

const readinessLines = (lines: Array<Record<string, unknown>>) => readinessLogLines(lines as LogLine[])

async function probes (app: { inject: (url: string) => Promise<{ body: string }> }, count: number) {
  const answers = new Set<string>()
  for (let i = 0; i < count; i++) answers.add((await app.inject('/readyz')).body)
  return [...answers]
}

/** The store plugin and the health routes alone, on a clock the test moves: /readyz as the app has it. */
async function appOnClock (t: Test, store: ReturnType<typeof switchableStore>['store']) {
  const clock = fakeClock()
  const { lines, logger } = collectLogs('info')
  const app = Fastify({ logger })
  for (const schema of sharedSchemas()) app.addSchema(schema)
  await app.register(storePlugin, { store, schedule: clock.schedule })
  await app.register(healthRoutes, { tag: 'health' })
  t.teardown(() => app.close())
  await app.ready()
  return { app, clock, lines }
}

t.test('a store down at start: one warning then, none for each probe; every change told, the last line the state', async (t) => {
  const { lines, logger } = collectLogs('info')
  const { state, store } = switchableStore(new StoreUnavailableError({ cause: new Error('connect ECONNREFUSED 127.0.0.1:5432') }))
  const { app } = await buildPlugin(t, { store }, { logger })
  t.match(readinessLines(lines), [{ level: 40, reason: 'The plant store is unavailable, try again later: connect ECONNREFUSED 127.0.0.1:5432', msg: NOT_READY_AT_START }],
    'a warning at start, with the reason')
  t.same(await probes(app, 20), [JSON.stringify(UNAVAILABLE)], '/readyz answers 503 in the Error shape, as before')
  t.equal(readinessLines(lines).length, 1, '20 probes while down: no more lines')

  state.failure = undefined
  t.same(await probes(app, 20), ['{"status":"ok"}'], 'ready again')
  state.failure = unavailable('the disk is gone')
  t.same(await probes(app, 20), [JSON.stringify(UNAVAILABLE)], 'down again')
  await app.close()
  // Within a second of the first, a change waits for the summary (the close tells it); later, it is a line at once.
  t.equal(accountedFor(readinessLines(lines) as LogLine[]), 3, 'the three changes are each told or counted', { lines: readinessLines(lines) })
  t.match(readinessLines(lines).at(-1), { level: 40, reason: /the disk is gone$/, msg: /\/readyz (now )?answers 503/ }, 'the last line tells the state, and why')
  t.notOk(JSON.stringify(lines).includes('stack'), 'no stack')
  t.notOk(lines.some(({ msg }) => msg === 'request failed'), 'no line per probe')
})

t.test('changes a second apart: one line each, at once: info when ready, a warning when not', async (t) => {
  const { state, store } = switchableStore(unavailable('connect ECONNREFUSED 127.0.0.1:5432'))
  const { app, clock, lines } = await appOnClock(t, store)
  t.match(readinessLines(lines), [{ level: 40, reason: /ECONNREFUSED/, msg: NOT_READY_AT_START }])
  clock.runAll()
  t.equal(clock.pending(), 0, 'a second without a change: no timer left')
  state.failure = undefined
  t.same(await probes(app, 5), ['{"status":"ok"}'])
  clock.runAll()
  state.failure = unavailable('the disk is gone')
  t.same(await probes(app, 5), [JSON.stringify(UNAVAILABLE)])
  clock.runAll()
  t.match(readinessLines(lines).slice(1), [{ level: 30, msg: READY_AGAIN }, { level: 40, reason: /the disk is gone$/, msg: NOT_READY }],
    'one line for each change')
  t.equal(readinessLines(lines).length, 3, 'and nothing more')
})

t.test('a store that flaps, probed 16 times a second for 6 s: a line a second, every change counted, the last line the state', async (t) => {
  const { state, store } = switchableStore()
  const { app, clock, lines } = await appOnClock(t, store)
  const answers: number[] = []
  for (let second = 0; second < 6; second++) {
    for (let probe = 0; probe < 16; probe++) {
      // Down for two probes, up for two: 8 changes a second, 48 in all.
      state.failure = Math.floor(probe / 2) % 2 === 0 ? unavailable(`flap ${second}.${probe}`) : undefined
      answers.push((await app.inject('/readyz')).statusCode)
    }
    clock.runAll()
  }
  t.equal(answers.filter((status) => status === 503).length, 48, '/readyz answered each probe as the store was (48 of 96 probes 503)')
  const told = readinessLines(lines)
  t.equal(told.length, 7, '7 lines for 48 changes in 6 s, not a line each', { lines: told.map(({ msg }) => msg) })
  t.match(told[0], { level: 40, reason: /flap 0\.0$/, msg: NOT_READY }, 'the first change at once')
  t.match(told.slice(1), Array.from({ length: 6 }, (_, second) => ({ level: 30, repeated: second === 0 ? 7 : 8, msg: readinessChanged(second === 0 ? 7 : 8, true) })),
    'then a summary a second, with the count, saying /readyz now answers 200')
  t.equal(accountedFor(told as LogLine[]), 48, 'every change is told or counted')

  // One more change, then the app closes before the second is over: the close tells it.
  state.failure = unavailable('the disk is gone')
  t.same(await probes(app, 3), [JSON.stringify(UNAVAILABLE)])
  t.equal(readinessLines(lines).length, 7, 'a change within the second after a summary waits for the next one')
  await app.close()
  t.match(readinessLines(lines).slice(7), [{ level: 40, repeated: 1, reason: /the disk is gone$/, msg: readinessChanged(1, false) }],
    'the close tells the last state: 503, and why')
  t.equal(clock.pending(), 0, 'and stops the timer')
  t.notOk(JSON.stringify(lines).includes('stack'), 'no stack')
})

t.test('a store ready at start says nothing; a ping that fails for a bug is logged with its stack', async (t) => {
  const { lines, logger } = collectLogs('info')
  const { state, store } = switchableStore()
  const { app } = await buildPlugin(t, { store }, { logger })
  t.same(await probes(app, 2), ['{"status":"ok"}'])
  t.same(readinessLines(lines), [], 'nothing at start')
  state.failure = new TypeError('undefined is not a function')
  t.same(await probes(app, 3), [JSON.stringify(UNAVAILABLE)], '/readyz answers 503')
  t.match(readinessLines(lines), [{ level: 40, msg: NOT_READY, err: { message: /undefined is not a function/, stack: String } }], 'once, with the stack')
})
