import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'
import fp from 'fastify-plugin'
import type { LoadSheddingOptions } from './limit-options.js'
import { ServiceOverloadedError } from './errors.js'

const SAMPLE_INTERVAL = 1000
// The event-loop delay histogram's own timer, in ms: a delay below it is no delay.
const RESOLUTION = 10

/**
 * The event loop's mean delay (ms) over a sample, from its delay histogram. With no sample at all,
 * the loop was blocked the whole time: no figure, and the worst one. (The histogram records a
 * delay between two of its own ticks, and none for the first tick after a reset.)
 */
export const meanLoopDelay = (histogram: { mean: number }): number =>
  Number.isNaN(histogram.mean) ? Infinity : histogram.mean / 1e6 - RESOLUTION

/**
 * Refuses the routes of the registering scope with 503 and Retry-After while the process is
 * overloaded, so that the requests it does take are answered in time. Checked once a second,
 * from sources that need no file descriptor. (@fastify/under-pressure, used before, samples
 * process.memoryUsage() on a timer, whatever its options: that reads /proc, throws EMFILE once a
 * flood of connections has used the descriptors up, and the uncaught error ends the process.)
 */
export default fp<LoadSheddingOptions>(async function loadShedding (fastify, options) {
  const { maxEventLoopDelay = 0, maxEventLoopUtilization = 0, maxHeapUsedBytes = 0, retryAfter = 10 } = options
  if (maxEventLoopDelay === 0 && maxEventLoopUtilization === 0 && maxHeapUsedBytes === 0) return

  const delays = monitorEventLoopDelay({ resolution: RESOLUTION })
  let utilization = performance.eventLoopUtilization()
  let overloaded = false
  let sampler: NodeJS.Timeout | undefined
  const sample = () => {
    const delay = meanLoopDelay(delays)
    delays.reset()
    const now = performance.eventLoopUtilization()
    const utilized = performance.eventLoopUtilization(now, utilization).utilization
    utilization = now
    overloaded = (maxEventLoopDelay > 0 && delay > maxEventLoopDelay) ||
      (maxEventLoopUtilization > 0 && utilized > maxEventLoopUtilization) ||
      (maxHeapUsedBytes > 0 && getHeapStatistics().used_heap_size > maxHeapUsedBytes)
  }
  // Measured from the moment the app is ready: its own start-up (modules loaded, the store opened,
  // the routes compiled) blocks the loop too, and is no reason to refuse its first requests.
  fastify.addHook('onReady', (done) => {
    delays.enable()
    utilization = performance.eventLoopUtilization()
    sampler = setInterval(sample, SAMPLE_INTERVAL).unref()
    done()
  })
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sampler)
    delays.disable()
    done()
  })

  fastify.addHook('onRequest', (_request, reply, done) => {
    if (!overloaded) return done()
    reply.header('retry-after', retryAfter)
    done(new ServiceOverloadedError())
  })
}, { name: 'plant-store-load-shedding' })
