import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import t from 'tap'
import plantStore from '../../src/plugin.js'
import { AUTH, build, collectLogs, createPlant, TOKEN } from '../helpers/app.js'
import { startReceiver } from '../helpers/receiver.js'
import { median } from '../helpers/time.js'
import { eventually, newSecret, webhooksFor } from '../helpers/webhooks.js'

// A thread starts through the TypeScript loader here: seconds on a busy machine.
const THREAD_START_MS = 60_000

const metricOf = async (app: Awaited<ReturnType<typeof build>>['app'], pattern: RegExp) =>
  pattern.exec((await app.inject({ url: '/metrics' })).body)?.[1]

// Independent subtests, each its own files and receiver, mostly waiting for a thread to start: together.
t.jobs = 4

t.test('SQLite, delivery thread (the default): each create delivered; its attempts reach /metrics of the API thread', async (t) => {
  const receiver = await startReceiver(t)
  const { app } = await build(t, { store: `sqlite:${join(t.testdir({}), 'plants.db')}`, webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]) })
  for (let id = 1; id <= 3; id++) t.equal((await createPlant(app, `{"id":${id},"name":"a"}`)).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 3, THREAD_START_MS), 'three deliveries')
  const success = /plant_store_webhook_attempts_total\{endpoint="e0",outcome="success"\} (\d+)/
  let counted: string | undefined
  for (const end = Date.now() + 5000; counted !== '3' && Date.now() < end; await sleep(20)) counted = await metricOf(app, success)
  t.equal(counted, '3', 'three successful attempts counted')
  // Woken by each commit, not found at the next poll (every second): a median far below half a second.
  const latencies: number[] = []
  for (let id = 4; id <= 10; id++) {
    const created = Date.now()
    t.equal((await createPlant(app, `{"id":${id},"name":"a"}`)).statusCode, 200)
    t.ok(await eventually(() => receiver.received.length === id, 5000))
    latencies.push(receiver.received[id - 1].at - created)
  }
  t.ok(median(latencies) < 250, `delivered a median ${median(latencies)} ms after the create (${latencies.join(', ')})`)
  if (process.platform === 'linux') {
    // Each thread's nice value (field 19 of its stat): the delivery thread's is its own.
    const niceOf = (task: string) => {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8')
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    }
    const api = niceOf(String(process.pid))
    t.ok(readdirSync('/proc/self/task').some((task) => niceOf(task) === Math.min(api + 10, 19)), `the delivery thread runs at nice ${Math.min(api + 10, 19)}, below the API's ${api}`)
  }
})

t.test('ready() resolves once the delivery thread is up: its line is in the log by then (or, past the bound, the warning)', async (t) => {
  const receiver = await startReceiver(t)
  const { lines, logger } = collectLogs('info')
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  await app.register(plantStore, { tokens: [TOKEN], store: `sqlite:${join(t.testdir({}), 'plants.db')}`, webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]) })
  await app.ready()
  // From TypeScript source a thread can take longer than the bound on a busy machine: then the warning says so.
  const upOrLate = ({ msg }: { msg?: unknown }) => msg === 'webhooks: delivering in a thread of its own' || /the delivery thread is not up after \d+ ms/.test(String(msg))
  t.ok(lines.some(upOrLate), 'the thread was up, or said not to be, when ready() resolved')
  t.equal((await createPlant(app as never, '{"id":1,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1, THREAD_START_MS), 'delivered')
})

t.test('delivery in-process on SQLite; off: events written, none sent, until an app that delivers opens the file', async (t) => {
  const store = `sqlite:${join(t.testdir({}), 'plants.db')}`
  const receiver = await startReceiver(t)
  const webhooks = webhooksFor([{ url: receiver.url, secret: newSecret() }])
  const { app: apiOnly } = await build(t, { store, webhooks: { ...webhooks, delivery: 'off' } })
  t.equal((await createPlant(apiOnly, '{"id":1,"name":"a"}')).statusCode, 200)
  // Written, and left to another instance: no worker claims it here (a claim would push its due time to its lease's end).
  const [event] = (await apiOnly.inject({ url: '/webhooks/events', headers: AUTH })).json()
  t.match(event.deliveries, [{ endpoint: 'e0', state: 'pending', attempts: 0, history: [] }], 'off: the event written, pending')
  t.ok(Date.parse(event.deliveries[0].dueAt) <= Date.now(), 'due since it was written: never claimed')
  t.equal(receiver.received.length, 0, 'off: nothing sent')
  const { app: delivering } = await build(t, { store, webhooks: { ...webhooks, delivery: 'in-process' } })
  t.ok(await eventually(() => receiver.received.length === 1, 10_000), 'the app delivering in-process sends it')
  t.equal((await createPlant(delivering, '{"id":2,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 2, 10_000), 'and its own')
  await apiOnly.close()
  await delivering.close()
})

t.test('a delivery-only app: the outbox delivered, /healthz and /readyz, no plant or admin route', async (t) => {
  const store = `sqlite:${join(t.testdir({}), 'plants.db')}`
  const receiver = await startReceiver(t)
  const webhooks = webhooksFor([{ url: receiver.url, secret: newSecret() }])
  const { app: apiOnly } = await build(t, { store, webhooks: { ...webhooks, delivery: 'off' } })
  t.equal((await createPlant(apiOnly, '{"id":1,"name":"a"}')).statusCode, 200)
  const { app: delivery } = await build(t, { store, webhooks }, { api: false })
  t.ok(await eventually(() => receiver.received.length === 1, THREAD_START_MS), 'the event written by the API-only app is delivered')
  t.equal((await delivery.inject({ url: '/healthz' })).statusCode, 200)
  t.equal((await delivery.inject({ url: '/readyz' })).statusCode, 200)
  t.equal((await createPlant(delivery, '{"id":2,"name":"a"}')).statusCode, 404, 'no plant route')
  t.equal((await delivery.inject({ url: '/webhooks/events' })).statusCode, 404, 'no admin route')
  t.equal((await delivery.inject({ url: '/documentation/json' })).statusCode, 404, 'no documentation')
  let counted: string | undefined
  for (const end = Date.now() + 5000; counted !== '1' && Date.now() < end; await sleep(20)) {
    counted = await metricOf(delivery, /plant_store_webhook_attempts_total\{endpoint="e0",outcome="success"\} (\d+)/)
  }
  t.equal(counted, '1', 'its /metrics counts the attempt')
  await apiOnly.close()
  await delivery.close()
})

t.test('a host\'s tracing without a thread module: delivery still in the thread, its attempts without span, said once in the log', async (t) => {
  const receiver = await startReceiver(t)
  const { lines, logger } = collectLogs('warn')
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  let attemptSpans = 0
  const tracing = { traceContext: () => undefined, attempt () { attemptSpans++; return { traceparent: undefined, end () {} } } }
  await app.register(plantStore, {
    tokens: [TOKEN],
    store: `sqlite:${join(t.testdir({}), 'plants.db')}`,
    webhooks: webhooksFor([{ url: receiver.url, secret: newSecret() }]),
    observeWebhooks: { event () {}, attempt () {}, outbox () {}, tracing }
  })
  t.equal((await createPlant(app as never, '{"id":1,"name":"a"}')).statusCode, 200)
  t.ok(await eventually(() => receiver.received.length === 1, THREAD_START_MS), 'delivered')
  t.equal(attemptSpans, 0, 'no span made on this thread')
  t.same(lines.filter(({ msg }) => String(msg).includes('no thread module')).length, 1, 'the log says so')
})
