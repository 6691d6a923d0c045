import type { AddressInfo } from 'node:net'
import type { FastifyRequest } from 'fastify'
import t from 'tap'
import { loggerOptions } from '../../service/config/app-options.js'
import { build, collectLogs, createPlant, TOKEN } from '../helpers/app.js'
import { rawRequest } from '../helpers/server-process.js'

t.test('at debug, one access-log line per request', async (t) => {
  const { lines, logger } = collectLogs('debug')
  const { app } = await build(t, {}, { logger })
  await createPlant(app, { id: 1, name: 'n' })
  await app.inject({ url: '/nope?access_token=secret-in-the-query' })
  const completed = lines.filter((line) => line.msg === 'request completed')
  t.match(completed, [
    { level: 20, method: 'POST', url: '/plants', statusCode: 200, responseTime: Number },
    { level: 20, method: 'GET', url: '/nope', statusCode: 404 }
  ], 'the path, without the query string')
  t.notMatch(JSON.stringify(lines), /secret-in-the-query/)
  t.equal(lines.filter((line) => line.msg === 'incoming request').length, 0, 'not Fastify\'s two lines')
})

t.test('at info, answered and refused requests add no log line', async (t) => {
  const { lines, logger } = collectLogs('info')
  const { app } = await build(t, {}, { logger })
  await createPlant(app, { id: 1, name: 'n' })
  await createPlant(app, { id: 2, name: 7 })
  await app.inject({ method: 'POST', url: '/plants', payload: {} })
  t.same(lines, [])
})

t.test('the logger hides a request\'s query string and Authorization header, wherever they are logged', async (t) => {
  const { lines, logger } = collectLogs('trace')
  const { app } = await build(t, {}, { logger: { ...loggerOptions('trace'), stream: logger.stream } })
  const log = app.log
  const request = { method: 'GET', url: '/plants?access_token=secret-one', ip: '127.0.0.1' } as unknown as FastifyRequest
  log.info({ req: request }, 'a request')
  log.info({ req: { headers: { authorization: 'Bearer secret-two' } }, headers: { authorization: 'Bearer secret-three' } }, 'headers')
  log.info({ upstream: { headers: { authorization: 'Bearer secret-four' } } }, 'nested headers')
  lines.splice(0, lines.findIndex((line) => line.msg === 'a request'))
  t.match(lines[0], { req: { method: 'GET', url: '/plants', remoteAddress: '127.0.0.1' } })
  t.notOk('headers' in (lines[1].req as object), 'a request\'s headers are not logged')
  t.notMatch(JSON.stringify(lines), /secret/)
})

// Wherever in the URL past its plain path a client puts a token: every way to begin a
// parameter, and the percent-escapes that spell those characters, once or twice encoded.
const PLACEMENTS = [
  '/plants?access_token=SECRET', '/plants%3Faccess_token=SECRET', '/plants%3faccess_token=SECRET', '/plants%253Faccess_token=SECRET',
  '/plants;access_token=SECRET', '/plants%3Baccess_token=SECRET', '/plants#access_token=SECRET', '/plants%23access_token=SECRET',
  '/plants&access_token=SECRET', '/plants=SECRET', '/plants%26access_token%3DSECRET', '/plants/%3Faccess_token=SECRET/',
  '/plants:SECRET', '/plants+SECRET', '/plants,SECRET', '/plants@SECRET', '/plants!SECRET', '/plants$SECRET'
]

t.test('at debug, no token-like part of a URL reaches the log, however it is placed or encoded', async (t) => {
  const { lines, logger } = collectLogs('debug')
  const { app } = await build(t, {}, { logger: { ...loggerOptions('debug'), stream: logger.stream } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  for (const path of PLACEMENTS) {
    const answer = await rawRequest(url, [`GET ${path} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${TOKEN}`])
    t.ok(answer.status >= 200, `${path}: answered ${answer.status}`)
    app.log.info({ req: { method: 'GET', url: path } }, 'a request')
  }
  const logged = lines.filter((line) => line.msg === 'request completed' || line.msg === 'a request')
  t.equal(logged.length, 2 * PLACEMENTS.length, 'each request logged, and each serialized')
  t.same(new Set(logged.map((line) => line.url ?? (line.req as { url: string }).url)), new Set(['/plants', '/plants/']), 'only the plain path')
  t.notMatch(JSON.stringify(lines), /SECRET/)
})
