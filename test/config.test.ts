import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { appOptions } from '../src/app.js'
import { loadConfig, readTokens } from '../src/config.js'

t.test('every setting has a default that starts the service on SQLite', async (t) => {
  t.same(loadConfig({}), {
    HOST: '127.0.0.1',
    PORT: 3000,
    DATABASE_URL: 'sqlite:./data/plants.db',
    LOG_LEVEL: 'info',
    BODY_LIMIT: 1048576,
    SHUTDOWN_TIMEOUT: 10000,
    CONNECTION_TIMEOUT: 60000,
    REQUEST_TIMEOUT: 30000,
    HEADERS_TIMEOUT: 10000,
    KEEP_ALIVE_TIMEOUT: 72000,
    MAX_HEADER_SIZE: 16384,
    PRESSURE_MAX_EVENT_LOOP_DELAY: 1000,
    PRESSURE_MAX_EVENT_LOOP_UTILIZATION: 0,
    PRESSURE_MAX_HEAP_USED_BYTES: 0,
    RATE_LIMIT_MAX: 0,
    RATE_LIMIT_WINDOW: 60000
  })
})

t.test('settings are read from the environment and typed', async (t) => {
  const config = loadConfig({
    HOST: '::', PORT: '0', DATABASE_URL: 'memory:', LOG_LEVEL: 'debug', BODY_LIMIT: '512', SHUTDOWN_TIMEOUT: '0', UNRELATED: 'x'
  })
  t.match(config, { HOST: '::', PORT: 0, DATABASE_URL: 'memory:', LOG_LEVEL: 'debug', BODY_LIMIT: 512, SHUTDOWN_TIMEOUT: 0 })
  t.notOk('UNRELATED' in config, 'only known settings are kept')
})

t.test('a bad setting is a one-line error that names the variable and how to fix it', async (t) => {
  const bad: Record<string, string> = {
    PORT: '99999',
    BODY_LIMIT: '0',
    LOG_LEVEL: 'loud',
    HOST: 'bad_host!',
    DATABASE_URL: 'mysql://localhost/plants',
    SHUTDOWN_TIMEOUT: '-1'
  }
  for (const [name, value] of Object.entries(bad)) {
    t.throws(() => loadConfig({ [name]: value }), { name: 'ConfigError' }, `${name}=${value}`)
    try {
      loadConfig({ [name]: value })
    } catch (error) {
      const { message } = error as Error
      t.match(message, new RegExp(`^Invalid configuration: ${name} .*; set ${name} to .+\\.$`), `${name}=${value}`)
      t.notMatch(message, /\n/, 'one line')
    }
  }
})

t.test('tokens come from API_TOKENS and API_TOKENS_FILE, trimmed, without empty entries', async (t) => {
  const file = join(t.testdir(), 'tokens')
  writeFileSync(file, ' file-one \n\nfile-two\r\nshared\n')
  t.same(readTokens({ API_TOKENS: ' a, b ,,shared' }), ['a', 'b', 'shared'])
  t.same(readTokens({ API_TOKENS_FILE: file }), ['file-one', 'file-two', 'shared'])
  t.same(readTokens({ API_TOKENS: 'a,shared', API_TOKENS_FILE: file }), ['a', 'shared', 'file-one', 'file-two'])
  t.same(readTokens({}), [])
  t.same(readTokens({ API_TOKENS: ' , ' }), [])
})

t.test('an unreadable token file is a configuration error naming API_TOKENS_FILE', async (t) => {
  t.throws(() => readTokens({ API_TOKENS_FILE: join(t.testdir(), 'missing') }), {
    message: /^Invalid configuration: API_TOKENS_FILE cannot be read \(ENOENT\)/
  })
})

t.test('the app options follow the settings: no rate limit unless RATE_LIMIT_MAX is set', async (t) => {
  t.equal(appOptions(loadConfig({}), ['a']).rateLimit, undefined)
  t.same(appOptions(loadConfig({ RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW: '1000' }), ['a']).rateLimit, { max: 5, timeWindow: 1000 })
  t.match(appOptions(loadConfig({ PRESSURE_MAX_HEAP_USED_BYTES: '1000000' }), ['a']).pressure, { maxHeapUsedBytes: 1000000 })
})
