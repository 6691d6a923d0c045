import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { DEFAULT_THREAD_LIMITS } from '../../plugins/webhooks/settings.js'
import { deliveryEntry, DeliveryThread, type ThreadEnd } from '../../plugins/webhooks/thread/host-side.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

const STAND_IN = new URL('../helpers/stand-in-delivery-thread.ts', import.meta.url)

function recordingLog () {
  const lines: Array<{ level: string, object: Record<string, unknown>, message: string }> = []
  const at = (level: string) => (object: object, message: string) => { lines.push({ level, object: object as Record<string, unknown>, message }) }
  return { lines, log: { warn: at('warn'), info: at('info'), error: at('error') } }
}

type Line = ReturnType<typeof recordingLog>['lines'][number]
const failures = (lines: Line[]) => lines.filter(({ level }) => level === 'error')

const data = { store: 'sqlite:unused.db', webhooks: webhooksFor([{ url: 'http://127.0.0.1:9/', secret: newSecret() }]) }
const started = (lines: Line[]) => lines.filter(({ message }) => message === 'stand-in started')

// Independent subtests, each its own threads and log, mostly waiting for a thread to start: together.
t.jobs = 5

t.test('a delivery thread that throws is logged and started again, each time after twice the wait, while this thread runs on', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const attempts: unknown[] = []
  const thread = new DeliveryThread({
    data: { ...data, mode: 'throw' } as never, log, clock, entry: STAND_IN, restartMs: 50, restartMaxMs: 60_000, onAttempt: (...attempt) => attempts.push(attempt)
  })
  thread.start()
  let ticks = 0
  const ticking = setInterval(() => ticks++, 10)
  for (let failure = 1; failure <= 3; failure++) {
    t.ok(await eventually(() => failures(lines).length === failure, 60_000), `failure ${failure} seen`)
    if (failure === 3) break
    const wait = failures(lines)[failure - 1].object.restartInMs as number
    await clock.advance(wait - 1)
    t.equal(clock.pending(), 1, `not started again ${wait - 1} ms after failure ${failure}`)
    await clock.advance(1)
    t.equal(clock.pending(), 0, `started again ${wait} ms after it`)
  }
  clearInterval(ticking)
  t.same(failures(lines).map(({ object }) => object.restartInMs), [50, 100, 200], 'started again after 50, 100 and 200 ms')
  t.match(failures(lines)[0], { message: /the delivery thread stopped; starting it again/, object: { err: { message: 'the stand-in failed' }, exitCode: 1, reason: 'error' } })
  t.ok(started(lines).length >= 3, 'each start is a new thread, and its log lines reach this log')
  t.same(attempts.slice(0, 2), [['e0', 'success', 0.01], ['e0', 'success', 0.02]], 'its attempts are told to this thread (the metrics), each one')
  t.ok(ticks > 10, `this thread's event loop ran on meanwhile (${ticks} ticks)`)
  await thread.stop(100)
  t.equal(clock.pending(), 0, 'the third restart called off')
})

t.test('a thread that ran longer than the longest wait is started again after the first wait', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const thread = new DeliveryThread({ data: { ...data, mode: 'throw' } as never, log, clock, entry: STAND_IN, restartMs: 50, restartMaxMs: 100, onAttempt () {} })
  thread.start()
  t.ok(await eventually(() => failures(lines).length === 1, 60_000), 'the first failure seen')
  await clock.advance(50)
  // The second run lasts the longest wait on the clock before it fails (a start takes the thread
  // far longer than this to load its modules).
  clock.set(clock.now() + 100)
  t.ok(await eventually(() => failures(lines).length === 2, 60_000), 'the second failure seen')
  t.same(failures(lines).map(({ object }) => object.restartInMs), [50, 50], 'after it, the first wait again, not twice it')
  await thread.stop(100)
})

t.test('stop: a thread that stops when asked is waited for; one that does not is ended after drainMs and the margin', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const obedient = new DeliveryThread({ data: { ...data, mode: 'obedient' } as never, log, clock, entry: STAND_IN, onAttempt () {} })
  obedient.start()
  t.ok(await eventually(() => lines.some(({ message }) => message === 'stand-in started'), 30_000))
  obedient.wake()
  obedient.wake()
  // Two in a row are one wake-up, unless the thread happens to wake between them (the doorbell's own test shows it).
  t.ok(await eventually(() => lines.some(({ message }) => message === 'stand-in rung'), 10_000), 'the thread hears the commits, without a message')
  obedient.pause()
  t.ok(await eventually(() => lines.some(({ message }) => message === 'stand-in told'), 10_000))
  t.same(lines.filter(({ message }) => message === 'stand-in told').map(({ object }) => object.received), ['pause'], 'the pause is a message')
  await obedient.stop(10_000)
  t.equal(clock.pending(), 0, 'stopped when asked, with the clock standing still: its end called off')
  t.notOk(lines.some(({ level }) => level === 'error'), 'a thread stopped is not started again')
  await obedient.stop(10_000)

  const deaf = new DeliveryThread({ data: { ...data, mode: 'deaf' } as never, log, clock, entry: STAND_IN, stopMarginMs: 200, onAttempt () {} })
  deaf.start()
  t.ok(await eventually(() => started(lines).length === 2, 30_000))
  let ended = false
  const stopping = deaf.stop(100).then(() => { ended = true })
  await clock.advance(299)
  t.notOk(ended, 'still waited for 299 ms after the stop')
  await clock.advance(1)
  await stopping
  t.pass('ended at drainMs 100 + margin 200')
  t.notOk(lines.some(({ level }) => level === 'error'), 'and not started again')
})

t.test('a stop while the thread waits to be started again ends the wait', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const thread = new DeliveryThread({ data: { ...data, mode: 'throw' } as never, log, clock, entry: STAND_IN, restartMs: 60_000, onAttempt () {} })
  thread.start()
  t.ok(await eventually(() => failures(lines).length === 1, 30_000))
  t.equal(clock.pending(), 1, 'its restart waits on the clock')
  // Told while no thread runs: nothing to tell.
  thread.wake()
  thread.pause()
  await thread.stop(100)
  t.equal(clock.pending(), 0, 'the restart called off')
  await clock.advance(60_000)
  t.equal(started(lines).length, 1, 'not started again')
})

t.test('start resolves once the thread says it is up, with the default limits of its engine', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const thread = new DeliveryThread({ data: { ...data, mode: 'obedient' } as never, log, clock, entry: STAND_IN, onAttempt () {} })
  await thread.start()
  t.equal(started(lines).length, 1, 'its line, sent before it said it was up, is here: the start waited for the thread')
  t.equal(clock.pending(), 0, 'the wait for it called off')
  t.match(started(lines)[0].object.resourceLimits, DEFAULT_THREAD_LIMITS, 'it runs with the default resourceLimits')
  await thread.stop(10_000)
})

t.test('a thread not up within upWithinMs: the start resolves all the same, with a warning; a stop ends the wait too', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const limits = { maxOldGenerationSizeMb: 200, maxYoungGenerationSizeMb: 8, stackSizeMb: 2 }
  const webhooks = { ...data.webhooks, threadResourceLimits: limits }
  const thread = new DeliveryThread({ data: { ...data, webhooks, mode: 'mute' } as never, log, clock, entry: STAND_IN, upWithinMs: 1000, onAttempt () {} })
  let resolved = false
  const starting = thread.start().then(() => { resolved = true })
  t.ok(await eventually(() => started(lines).length === 1, 30_000), 'the thread runs')
  await clock.advance(999)
  t.notOk(resolved, 'still waited for after 999 ms')
  t.same(lines.filter(({ level }) => level === 'warn'), [], 'no warning yet')
  await clock.advance(1)
  await starting
  t.match(lines.filter(({ level }) => level === 'warn'), [{ object: { upWithinMs: 1000 }, message: /the delivery thread is not up after 1000 ms; starting without it/ }])
  t.match(started(lines)[0].object.resourceLimits, limits, 'it runs with the limits of webhooks.threadResourceLimits')
  await thread.stop(10_000)

  // Closed before it is up (an app closed as it starts): the start waits no longer.
  const closed = new DeliveryThread({ data: { ...data, mode: 'mute' } as never, log, clock, entry: STAND_IN, upWithinMs: 1000, onAttempt () {} })
  const closedStart = closed.start()
  t.ok(await eventually(() => started(lines).length === 2, 30_000), 'the second thread runs')
  await closed.stop(10_000)
  await closedStart
  t.equal(clock.pending(), 0, 'its wait called off by the stop')
  t.equal(lines.filter(({ message }) => /is not up after/.test(message)).length, 1, 'no warning but the first thread\'s')
})

t.test('a thread that runs out of memory ends alone, named ERR_WORKER_OUT_OF_MEMORY, and is counted; one that exits, as an exit', async (t) => {
  const { lines, log } = recordingLog()
  const clock = fakeClock()
  const ends: ThreadEnd[] = []
  const webhooks = { ...data.webhooks, threadResourceLimits: { maxOldGenerationSizeMb: 64 } }
  const filling = new DeliveryThread({ data: { ...data, webhooks, mode: 'fill' } as never, log, clock, entry: STAND_IN, onAttempt () {}, onRestart: (end) => ends.push(end) })
  await filling.start()
  t.ok(await eventually(() => failures(lines).length === 1, 60_000), 'its end seen')
  t.match(failures(lines)[0], {
    message: /the delivery thread ran out of memory \(ERR_WORKER_OUT_OF_MEMORY: its heap reached 64 MB, webhooks\.threadResourceLimits\); starting it again/,
    object: { err: { code: 'ERR_WORKER_OUT_OF_MEMORY' }, reason: 'out_of_memory', restartInMs: 500, limits: { maxOldGenerationSizeMb: 64 } }
  })
  t.same(ends, ['out_of_memory'], 'told, with its reason')
  await filling.stop(100)

  const exiting = new DeliveryThread({ data: { ...data, mode: 'exit' } as never, log, clock, entry: STAND_IN, onAttempt () {}, onRestart: (end) => ends.push(end) })
  await exiting.start()
  t.ok(await eventually(() => failures(lines).length === 2, 60_000), 'its end seen')
  t.match(failures(lines)[1], { message: /the delivery thread stopped; starting it again/, object: { exitCode: 3, reason: 'exit' } })
  t.equal(failures(lines)[1].object.err, undefined, 'no error: it exited')
  t.same(ends, ['out_of_memory', 'exit'])
  await exiting.stop(100)
})

t.test('the thread\'s module: beside the host (compiled or source), else the bundle\'s dist/webhook-delivery.mjs', async (t) => {
  const dir = t.testdir({ compiled: { 'thread-entry.js': '' }, dist: { chunks: {}, 'webhook-delivery.mjs': '' }, none: {} })
  t.equal(deliveryEntry(pathToFileURL(join(dir, 'compiled/host-side.js')).href).pathname, join(dir, 'compiled/thread-entry.js'))
  t.equal(deliveryEntry(pathToFileURL(join(dir, 'dist/chunks/plugin-X.mjs')).href).pathname, join(dir, 'dist/webhook-delivery.mjs'))
  t.equal(deliveryEntry(pathToFileURL(join(dir, 'dist/server.mjs')).href).pathname, join(dir, 'dist/webhook-delivery.mjs'))
  t.equal(deliveryEntry(pathToFileURL(join(dir, 'none/host-side.js')).href).pathname, join(dir, 'none/thread-entry.js'), 'none found: the first, whose failure is logged')
  mkdirSync(join(dir, 'source'))
  writeFileSync(join(dir, 'source/thread-entry.ts'), '')
  t.equal(deliveryEntry(pathToFileURL(join(dir, 'source/host-side.ts')).href).pathname, join(dir, 'source/thread-entry.ts'))
})
