import t from 'tap'
import { build, collectLogs, createPlant } from './helpers/app.js'

t.test('at debug, one access-log line per request', async (t) => {
  const { lines, logger } = collectLogs('debug')
  const { app } = await build(t, {}, { logger })
  await createPlant(app, { id: 1, name: 'n' })
  await app.inject({ url: '/nope' })
  const completed = lines.filter((line) => line.msg === 'request completed')
  t.match(completed, [
    { level: 20, method: 'POST', url: '/plants', statusCode: 200, responseTime: Number },
    { level: 20, method: 'GET', url: '/nope', statusCode: 404 }
  ])
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
