import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { appOptions } from '../../service/config/app-options.js'
import { connectionLimit, loadConfig, openFilesLimit, readTokens, tokenlessLimit } from '../../service/config/index.js'

t.test('every setting has a default that starts the service on SQLite', async (t) => {
  t.same(loadConfig({}), {
    HOST: '127.0.0.1',
    PORT: 3000,
    DOCS: 'on',
    FEED: 'on',
    FEED_RETENTION: '168h',
    DATABASE_URL: 'sqlite:./data/plants.db',
    LOG_LEVEL: 'info',
    BODY_LIMIT: 1048576,
    MAX_TEXT_LENGTH: 1000,
    SHUTDOWN_TIMEOUT: 10000,
    CONNECTION_TIMEOUT: 60000,
    REQUEST_TIMEOUT: 30000,
    HEADERS_TIMEOUT: 10000,
    KEEP_ALIVE_TIMEOUT: 72000,
    MAX_HEADER_SIZE: 16384,
    MAX_HEADERS_COUNT: 100,
    BODY_MIN_RATE: 1024,
    BODY_RATE_GRACE: 5000,
    MAX_CONNECTIONS: 0,
    TOKENLESS_CONNECTION_SHARE: 0.5,
    PRESSURE_MAX_EVENT_LOOP_DELAY: 1000,
    PRESSURE_MAX_EVENT_LOOP_UTILIZATION: 0,
    PRESSURE_MAX_HEAP_USED_BYTES: 0,
    RATE_LIMIT_MAX: 0,
    RATE_LIMIT_WINDOW: 60000,
    AUTH_FAILURE_MAX: 10,
    AUTH_FAILURE_WINDOW: 60000,
    CORS_ORIGINS: '',
    WEBHOOK_DELIVERY: 'thread'
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
  const bad: Array<[string, string]> = Object.entries({
    PORT: '99999',
    BODY_LIMIT: '0',
    LOG_LEVEL: 'loud',
    HOST: 'bad_host!',
    DATABASE_URL: 'mysql://localhost/plants',
    SHUTDOWN_TIMEOUT: '-1',
    MAX_CONNECTIONS: '-5',
    TOKENLESS_CONNECTION_SHARE: '0'
  })
  // SQLite in memory would keep nothing, and better-sqlite3 would make a file named :memory:.
  bad.push(['DATABASE_URL', 'sqlite::memory:'])
  for (const [name, value] of bad) {
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

t.test('no duration may exceed what a Node timer holds (2^31-1 ms), where it would fire after 1 ms', async (t) => {
  const durations = ['SHUTDOWN_TIMEOUT', 'REQUEST_TIMEOUT', 'CONNECTION_TIMEOUT', 'HEADERS_TIMEOUT', 'KEEP_ALIVE_TIMEOUT',
    'RATE_LIMIT_WINDOW', 'PRESSURE_MAX_EVENT_LOOP_DELAY', 'BODY_RATE_GRACE']
  for (const name of durations) {
    // REQUEST_TIMEOUT=0 lets HEADERS_TIMEOUT be as long as allowed.
    t.doesNotThrow(() => loadConfig({ REQUEST_TIMEOUT: '0', [name]: String(2 ** 31 - 1) }), `${name}=2^31-1 is fine`)
    t.throws(() => loadConfig({ REQUEST_TIMEOUT: '0', [name]: String(2 ** 31) }), {
      message: new RegExp(`^Invalid configuration: ${name} must be <= 2147483647; set ${name} to .*at most 2147483647\\.$`)
    }, `${name}=2^31 is refused`)
  }
})

t.test('HEADERS_TIMEOUT longer than REQUEST_TIMEOUT is refused, naming HEADERS_TIMEOUT', async (t) => {
  t.throws(() => loadConfig({ HEADERS_TIMEOUT: '5000', REQUEST_TIMEOUT: '4000' }), {
    message: /^Invalid configuration: HEADERS_TIMEOUT \(5000\) is longer than REQUEST_TIMEOUT \(4000\); set HEADERS_TIMEOUT to at most REQUEST_TIMEOUT, or REQUEST_TIMEOUT to 0\.$/
  })
  t.match(loadConfig({ HEADERS_TIMEOUT: '5000', REQUEST_TIMEOUT: '0' }), { HEADERS_TIMEOUT: 5000, REQUEST_TIMEOUT: 0 })
})

t.test('a token that no Authorization header can carry is refused, saying where but not what it is', async (t) => {
  const file = join(t.testdir(), 'tokens')
  writeFileSync(file, 'fine\n  also-fine-trimmed  \nseedling-\u{1f331}\n')
  t.throws(() => readTokens({ API_TOKENS: 'fine,caf\u00e9' }), {
    message: /^Invalid configuration: API_TOKENS entry 2 holds a space or a character outside visible ASCII.*; set API_TOKENS to tokens of visible ASCII characters\.$/
  })
  t.throws(() => readTokens({ API_TOKENS: 'tab\tinside' }), { message: /API_TOKENS entry 1/ }, 'a control character')
  t.throws(() => readTokens({ API_TOKENS_FILE: file }), { message: /^Invalid configuration: API_TOKENS_FILE line 3 holds/ })
  try {
    readTokens({ API_TOKENS_FILE: file })
  } catch (error) {
    t.notMatch((error as Error).message, /seedling|\u{1f331}/u, 'the token is not in the message')
  }
  t.throws(() => readTokens({ API_TOKENS: 'ok, has inner space ' }), { message: /API_TOKENS entry 2/ },
    'a space inside would split "Bearer <token>" in two')
  t.same(readTokens({ API_TOKENS: ' padded , ,other' }), ['padded', 'other'], 'entries are trimmed, empty ones dropped')
})

t.test('the open-files limit is read from /proc, where there is one', async (t) => {
  const dir = t.testdir({
    limited: 'Limit                     Soft Limit           Hard Limit           Units     \nMax open files            256                  4096                 files     \n',
    unlimited: 'Max open files            unlimited            unlimited            files     \n'
  })
  t.equal(openFilesLimit(join(dir, 'limited')), 256, 'the soft limit')
  t.equal(openFilesLimit(join(dir, 'unlimited')), undefined, 'unlimited: none')
  t.equal(openFilesLimit(join(dir, 'missing')), undefined, 'no /proc: none')
  t.ok(Number.isInteger(openFilesLimit()), 'this process has one')
})

t.test('MAX_CONNECTIONS: by default half the descriptors left after a reserve, at most 10,000; never more', async (t) => {
  t.equal(connectionLimit({ MAX_CONNECTIONS: 0 }, 256), 96)
  t.equal(connectionLimit({ MAX_CONNECTIONS: 0 }, 1024), 480)
  t.equal(connectionLimit({ MAX_CONNECTIONS: 0 }, 1_048_576), 10_000, 'at most 10,000 by default')
  t.equal(connectionLimit({ MAX_CONNECTIONS: 0 }, undefined), 10_000, 'without a known limit')
  t.equal(connectionLimit({ MAX_CONNECTIONS: 0 }, 10), 1, 'at least one')
  t.equal(connectionLimit({ MAX_CONNECTIONS: 50_000 }, 1_048_576), 50_000, 'more than the default when the descriptors allow it')
  t.equal(connectionLimit({ MAX_CONNECTIONS: 96 }, 256), 96)
  t.throws(() => connectionLimit({ MAX_CONNECTIONS: 97 }, 256), {
    message: 'Invalid configuration: MAX_CONNECTIONS (97) needs more file descriptors than the open-files limit (ulimit -n) of 256 allows; set MAX_CONNECTIONS to at most 96, or raise the limit.'
  })
})

t.test('TOKENLESS_CONNECTION_SHARE: connections without a verified token may hold that share of MAX_CONNECTIONS, at least one', async (t) => {
  t.equal(tokenlessLimit({ TOKENLESS_CONNECTION_SHARE: 0.5 }, 10_000), 5000)
  t.equal(tokenlessLimit({ TOKENLESS_CONNECTION_SHARE: 0.25 }, 41), 10, 'rounded down')
  t.equal(tokenlessLimit({ TOKENLESS_CONNECTION_SHARE: 1 }, 200), 200, '1: no reserve')
  t.equal(tokenlessLimit({ TOKENLESS_CONNECTION_SHARE: 0.01 }, 10), 1, 'at least one')
})

t.test('FEED and FEED_RETENTION: off is feed: false (the webhooks keep their own retention); a retention of 0 is refused', async (t) => {
  const hook = { WEBHOOK_URL: 'https://example.com/hook', WEBHOOK_SECRET: `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`, WEBHOOK_RETENTION: '1h' }
  const off = appOptions(loadConfig({ FEED: 'off', ...hook }), ['a'])
  t.equal(off.feed, false)
  t.equal(off.webhooks?.retention, 3_600_000, 'the webhooks\' own retention')
  t.equal(appOptions(loadConfig(hook), ['a']).webhooks?.retention, 168 * 3_600_000, 'with the feed on, the longer of both')
  t.throws(() => appOptions(loadConfig({ FEED_RETENTION: '0s' }), ['a']), { message: 'Invalid configuration: FEED_RETENTION is 0; set it to a positive duration such as 168h.' })
})
