import fp from 'fastify-plugin'
import { pathOf } from './error-handler.js'

/**
 * One access-log line per answered request, at debug: shown with LOG_LEVEL=debug, and costing
 * nothing otherwise. At info, refusals (4xx) and failures (5xx) are still logged one by one by the
 * error handler, and /metrics counts every request. The URL is logged without its query string,
 * where a client may have put a token.
 */
export default fp(async function requestLog (fastify) {
  if (fastify.log.level !== 'debug' && fastify.log.level !== 'trace') return
  fastify.addHook('onResponse', (request, reply, done) => {
    request.log.debug({
      method: request.method, url: pathOf(request.url), statusCode: reply.statusCode, responseTime: reply.elapsedTime
    }, 'request completed')
    done()
  })
}, { name: 'plant-store-request-log' })
