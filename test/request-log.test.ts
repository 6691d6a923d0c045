import type { FastifyRequest } from 'fastify'
import t from 'tap'
import { loggerOptions } from '../src/app.js'
import { build, collectLogs, createPlant } from './helpers/app.js'

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
