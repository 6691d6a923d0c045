import fp from 'fastify-plugin'

// RFC 3986's unreserved characters and the slash: none of them can begin a parameter or hide one.
const PLAIN_PATH = /^[\w\-.~/]*/

/**
 * What the log shows of a request's URL: its path up to the first character that could begin a
 * parameter, where a client may have put a token: a query (?), matrix parameters (;), a fragment
 * (#), a key=value or &, and any percent-escape (%3F is a ?, %253F one once more encoded).
 */
export const pathOf = (url: string) => PLAIN_PATH.exec(url)![0]

/**
 * One access-log line per answered request, at debug: shown with LOG_LEVEL=debug, and costing
 * nothing otherwise. At info, refusals (4xx) and failures (5xx) are still logged one by one by the
 * error handler, and /metrics counts every request. Of the URL, only its plain path is logged (pathOf).
 */
export default fp(async function requestLog (fastify) {
  if (fastify.log.level !== 'debug' && fastify.log.level !== 'trace') return
  fastify.addHook('onResponse', (request, reply, done) => {
    request.log.debug({
      // The client's address: behind a proxy, what its X-Forwarded-For says when TRUST_PROXY names it.
      method: request.method, url: pathOf(request.url), statusCode: reply.statusCode, responseTime: reply.elapsedTime, remoteAddress: request.ip
    }, 'request completed')
    done()
  })
}, { name: 'plant-store-request-log' })
