import t from 'tap'
import { StoreUnavailableError } from '../../errors/index.js'
import { NOT_READY, NOT_READY_AT_START, READY_AGAIN } from '../../stores/readiness.js'
import { createMemoryStore } from '../../stores/memory/store.js'
import { build, collectLogs } from '../helpers/app.js'

const UNAVAILABLE = { error: 503, message: new StoreUnavailableError().message }

/** A memory store whose ping fails with `state.failure` while it is set. */
function switchableStore (failure?: unknown) {
  const state = { failure }
  const store = { ...createMemoryStore(), ping: async () => { if (state.failure !== undefined) throw state.failure } }
  return { state, store }
}

const readinessLines = (lines: Array<Record<string, unknown>>) => lines.filter(({ msg }) => String(msg).includes('/readyz'))

async function probes (app: Awaited<ReturnType<typeof build>>['app'], count: number) {
  const answers = new Set<string>()
  for (let i = 0; i < count; i++) answers.add((await app.inject('/readyz')).body)
  return [...answers]
}

t.test('a store down at start: one warning then, none for each probe, one line on each change', async (t) => {
  const { lines, logger } = collectLogs('info')
  const { state, store } = switchableStore(new StoreUnavailableError({ cause: new Error('connect ECONNREFUSED 127.0.0.1:5432') }))
  const { app } = await build(t, { store }, { logger })
  t.match(readinessLines(lines), [{ level: 40, reason: 'The plant store is unavailable, try again later: connect ECONNREFUSED 127.0.0.1:5432', msg: NOT_READY_AT_START }],
    'a warning at start, with the reason')
  t.same(await probes(app, 20), [JSON.stringify(UNAVAILABLE)], '/readyz answers 503 in the Error shape, as before')
  t.equal(readinessLines(lines).length, 1, '20 probes while down: no more lines')

  state.failure = undefined
  t.same(await probes(app, 20), ['{"status":"ok"}'], 'ready again')
  state.failure = new StoreUnavailableError({ cause: new Error('the disk is gone') })
  t.same(await probes(app, 20), [JSON.stringify(UNAVAILABLE)], 'down again')
  t.match(readinessLines(lines).slice(1), [{ level: 30, msg: READY_AGAIN }, { level: 40, reason: /the disk is gone$/, msg: NOT_READY }],
    'one line for each change: info when ready, a warning when not')
  t.notOk(JSON.stringify(lines).includes('stack'), 'no stack')
  t.notOk(lines.some(({ msg }) => msg === 'request failed'), 'no line per probe')
})

t.test('a store ready at start says nothing; a ping that fails for a bug is logged with its stack', async (t) => {
  const { lines, logger } = collectLogs('info')
  const { state, store } = switchableStore()
  const { app } = await build(t, { store }, { logger })
  t.same(await probes(app, 2), ['{"status":"ok"}'])
  t.same(readinessLines(lines), [], 'nothing at start')
  state.failure = new TypeError('undefined is not a function')
  t.same(await probes(app, 3), [JSON.stringify(UNAVAILABLE)], '/readyz answers 503')
  t.match(readinessLines(lines), [{ level: 40, msg: NOT_READY, err: { message: /undefined is not a function/, stack: String } }], 'once, with the stack')
})
