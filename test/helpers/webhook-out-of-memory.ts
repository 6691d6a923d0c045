import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import type { Test } from 'tap'
import type { ThreadLimits } from '../../plugins/webhooks/options-schema.js'
import { DEFAULT_THREAD_LIMITS } from '../../plugins/webhooks/settings.js'
import { metricsRoute } from '../../service/observe/metrics.js'
import { webhookMetrics } from '../../service/observe/webhook-metrics.js'
import plantStore from '../../src/plugin.js'
import { collectLogs, createPlant, TOKEN } from './app.js'
import type { OutOfMemoryData } from './out-of-memory-delivery-thread.js'
import { startReceiver } from './receiver.js'
import { eventually, newSecret, verifyDelivery, webhooksFor } from './webhooks.js'

const OUT_OF_MEMORY_ENTRY = new URL('./out-of-memory-delivery-thread.ts', import.meta.url)
// A thread starts through the TypeScript loader here: seconds on a busy machine.
const THREAD_START_MS = 60_000

const RAN_OUT = /^webhooks: the delivery thread ran out of memory \(ERR_WORKER_OUT_OF_MEMORY/
const THREAD_UP = 'webhooks: delivering in a thread of its own'

/**
 * An app on `store` whose delivery thread runs out of memory for real on its first start (with
 * `limits`, or the default ones), while creates go on one after another: each answered 200, the
 * end logged with its code and counted in /metrics, every acknowledged event delivered and signed.
 */
export async function assertSurvivesOutOfMemory (t: Test, store: string, limits: Partial<ThreadLimits> = {}) {
  const receiver = await startReceiver(t)
  const secret = newSecret()
  const firstStart = join(t.testdir({}), 'first-start')
  writeFileSync(firstStart, '')
  const { lines, logger } = collectLogs('info')
  const registry = new Registry()
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  metricsRoute(app, registry)
  const data: OutOfMemoryData = { firstStart }
  // The thread's module is the stand-in's, given as a tracing's thread module is; it makes no span.
  const tracing = { traceContext: () => undefined, attempt: () => ({ traceparent: undefined, end () {} }), thread: { entry: OUT_OF_MEMORY_ENTRY, data } }
  await app.register(plantStore, {
    tokens: [TOKEN],
    store,
    webhooks: webhooksFor([{ url: receiver.url, secret }], { threadResourceLimits: limits }),
    observeWebhooks: { ...webhookMetrics(registry), tracing }
  })
  await app.ready()
  const seen = (pattern: RegExp | string) => lines.some(({ msg }) => typeof pattern === 'string' ? msg === pattern : pattern.test(String(msg)))

  // Creates, one after another, from the first start until the real thread is up and ten more.
  const statuses: number[] = []
  const phases = { before: 0, during: 0, after: 0 }
  for (let id = 1; phases.after < 10 && id <= 100_000; id++) {
    const phase = seen(THREAD_UP) ? 'after' : seen('out-of-memory stand-in: filling its heap') ? 'during' : 'before'
    statuses.push((await createPlant(app as never, `{"id":${id},"name":"fern ${id}"}`)).statusCode)
    phases[phase]++
  }
  t.ok(seen(RAN_OUT), 'the thread ran out of memory, and the log says so by its code')
  t.ok(seen(THREAD_UP), 'and was started again: the real thread is up')
  t.same(statuses.filter((status) => status !== 200), [],
    `every create answered 200: ${phases.before} before, ${phases.during} while the thread filled its heap, ran out and was started again, ${phases.after} after`)
  t.ok(phases.during > 0, 'some while it was down')
  const [ranOut] = lines.filter(({ msg }) => RAN_OUT.test(String(msg)))
  t.match(ranOut, { level: 50, reason: 'out_of_memory', err: { code: 'ERR_WORKER_OUT_OF_MEMORY' }, limits: { ...DEFAULT_THREAD_LIMITS, ...limits } }, 'logged as an error, with the limits it ran with')

  t.ok(await eventually(() => receiver.received.length >= statuses.length, THREAD_START_MS), `all ${statuses.length} acknowledged events delivered after the restart`)
  const delivered = new Set(receiver.received.map(({ body }) => /"id":(\d+)/.exec(body)![1]))
  t.equal(delivered.size, statuses.length, 'one for each plant')
  for (const { headers, body } of receiver.received) verifyDelivery(secret, headers, body)
  const metrics = (await app.inject({ url: '/metrics' })).body
  t.match(metrics, /^plant_store_webhook_thread_restarts_total\{reason="out_of_memory"\} 1$/m, 'the restart counted in /metrics, by its reason')
  t.equal(lines.filter(({ msg }) => RAN_OUT.test(String(msg))).length, 1, 'once: the thread started again runs on')
}
