import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { ServiceOverloadedError } from './http-errors.js'

export interface LoadSheddingOptions {
  /** Event-loop delay in ms above which requests are refused; 0 turns the check off. */
  maxEventLoopDelay?: number
  /** Event-loop utilization (0 to 1) above which requests are refused; 0 turns the check off. */
  maxEventLoopUtilization?: number
  /** Heap use in bytes above which requests are refused; 0 turns the check off. */
  maxHeapUsedBytes?: number
  /** Seconds a refused client is told to wait (Retry-After). */
  retryAfter?: number
}

/**
 * Refuses the routes of the registering scope with 503 and Retry-After while the process is
 * overloaded, so that the requests it does take are answered in time.
 */
export default fp<LoadSheddingOptions>(async function loadShedding (fastify, options) {
  await fastify.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelay ?? 0,
    maxEventLoopUtilization: options.maxEventLoopUtilization ?? 0,
    maxHeapUsedBytes: options.maxHeapUsedBytes ?? 0,
    retryAfter: options.retryAfter ?? 10,
    customError: ServiceOverloadedError
  })
}, { name: 'plant-store-load-shedding' })
