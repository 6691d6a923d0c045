import Fastify, { LogController } from 'fastify'
import t from 'tap'
import { lazyChildLogger } from '../../service/observe/lazy-child-logger.js'
import { build, collectLogs, createPlant } from '../helpers/app.js'

t.test('a request\'s lines carry its request id, at every level the app logs', async (t) => {
  const { lines, logger } = collectLogs('trace')
  const app = Fastify({ logger, childLoggerFactory: lazyChildLogger, logController: new LogController({ disableRequestLogging: true }) })
  t.teardown(() => app.close())
  app.get('/', async (request) => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const) request.log[level]({ n: 1 }, level)
    request.log.child({ part: 'inner' }).info('from a child')
    request.log.silent('never written')
    return { level: request.log.level }
  })
  const response = await app.inject({ url: '/' })
  t.same(response.json(), { level: 'trace' })
  t.match(lines, [
    { level: 60, msg: 'fatal', n: 1, reqId: 'req-1' }, { level: 50, msg: 'error', reqId: 'req-1' },
    { level: 40, msg: 'warn', reqId: 'req-1' }, { level: 30, msg: 'info', reqId: 'req-1' },
    { level: 20, msg: 'debug', reqId: 'req-1' }, { level: 10, msg: 'trace', reqId: 'req-1' },
    { level: 30, msg: 'from a child', reqId: 'req-1', part: 'inner' }
  ])
  t.equal(lines.length, 7)
})

t.test('lines below the app\'s level are dropped; a level set on the request\'s logger holds', async (t) => {
  const { lines, logger } = collectLogs('info')
  const app = Fastify({ logger, childLoggerFactory: lazyChildLogger, logController: new LogController({ disableRequestLogging: true }) })
  t.teardown(() => app.close())
  app.get('/', async (request) => {
    request.log.debug('dropped')
    request.log.level = 'debug'
    request.log.debug('kept')
    return { level: request.log.level }
  })
  app.get('/quiet', { logLevel: 'warn' }, async (request) => {
    request.log.info('dropped by the route\'s level')
    request.log.warn('kept by the route\'s level')
    return 'ok'
  })
  t.same((await app.inject({ url: '/' })).json(), { level: 'debug' })
  await app.inject({ url: '/quiet' })
  t.match(lines, [{ msg: 'kept', reqId: 'req-1' }, { msg: 'kept by the route\'s level', reqId: 'req-2' }])
  t.equal(lines.length, 2)
})

t.test('a logger without isLevelEnabled is asked to log every line', async (t) => {
  const written: string[] = []
  const plain = {
    level: 'info',
    fatal: () => {},
    error: () => {},
    warn: () => {},
    info: (message: string) => { written.push(message) },
    debug: (message: string) => { written.push(message) },
    trace: () => {},
    silent: () => {},
    child () { return this }
  }
  const app = Fastify({ loggerInstance: plain, childLoggerFactory: lazyChildLogger, logController: new LogController({ disableRequestLogging: true }) })
  t.teardown(() => app.close())
  app.get('/', async (request) => {
    const level = request.log.level
    request.log.debug('debug line')
    return level
  })
  t.equal((await app.inject({ url: '/' })).body, 'info', 'the app\'s level until a line is written')
  t.same(written.filter((line) => line === 'debug line'), ['debug line'])
})

t.test('the service logs a failure with its request id', async (t) => {
  const { lines, logger } = collectLogs('info')
  const store = { ...(await import('../../plugins/store/memory/store.js')).createMemoryStore(), create: async () => { throw new Error('disk on fire') } }
  const { app } = await build(t, { store }, { logger })
  t.equal((await createPlant(app, { id: 1, name: 'n' })).statusCode, 500)
  t.match(lines, [{ level: 50, msg: 'request failed', reqId: String, err: { message: 'disk on fire' } }])
})
