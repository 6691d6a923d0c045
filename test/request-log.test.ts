import { Writable } from 'node:stream'
import t from 'tap'
import { build, createPlant } from './helpers/app.js'

function collector (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()))
      done()
    }
  })
  return { lines, logger: { level, stream } }
}

t.test('at debug, one access-log line per request', async (t) => {
  const { lines, logger } = collector('debug')
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
  const { lines, logger } = collector('info')
  const { app } = await build(t, {}, { logger })
  await createPlant(app, { id: 1, name: 'n' })
  await createPlant(app, { id: 2, name: 7 })
  await app.inject({ method: 'POST', url: '/plants', payload: {} })
  t.same(lines, [])
})
