/**
 * Configuration that cannot work is refused at start, in the service's words: a
 * token file that is not a regular file of bounded size, limits past what a process can hold,
 * TLS asked of a server without it; and REQUEST_TIMEOUT=0 works with any HEADERS_TIMEOUT.
 */
import { execFileSync } from 'node:child_process'
import { truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { connectionOptions } from '../../service/config/app-options.js'
import { loadConfig, MAX_TOKENS_FILE_BYTES, readTokens } from '../../service/config/index.js'
import { MAX_BODY_LIMIT, MAX_TEXT_LENGTH_LIMIT } from '../../schemas/index.js'
import { checkOptions } from '../../src/options.js'
import { listening, TOKEN as TEST_TOKEN } from '../helpers/app.js'
import { send } from '../helpers/load.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'
import { exitWithin, linesOf, spawnServer, START_TIMEOUT } from '../helpers/server-process.js'

// The subtests are independent; those that start a server process overlap their start-ups.
t.jobs = 8

const TOKEN = 'test-token-config-refusals'
const pgSkip = await postgresSkip()

t.test('API_TOKENS_FILE must be a regular file of at most 1 MiB: a device, a pipe, a folder or a huge file is refused', async (t) => {
  const folder = t.testdir({ 'tokens.txt': 'file-token\n' })
  const huge = join(folder, 'huge.txt')
  writeFileSync(huge, 'x')
  truncateSync(huge, MAX_TOKENS_FILE_BYTES + 1)
  const fits = join(folder, 'fits.txt')
  writeFileSync(fits, `${'a'.repeat(MAX_TOKENS_FILE_BYTES - 1)}\n`)
  t.same(readTokens({ API_TOKENS_FILE: fits }), ['a'.repeat(MAX_TOKENS_FILE_BYTES - 1)], 'a file of exactly the limit is read')
  for (const [file, problem] of [['/dev/zero', 'is not a regular file'], [folder, 'is not a regular file'],
    [huge, `is larger than ${MAX_TOKENS_FILE_BYTES} bytes`]]) {
    t.throws(() => readTokens({ API_TOKENS_FILE: file }), {
      message: `Invalid configuration: API_TOKENS_FILE ${problem}; set it to a readable regular file of tokens, one a line, at most ${MAX_TOKENS_FILE_BYTES} bytes.`
    }, `${file}: ${problem}`)
  }
})

t.test('a named pipe as API_TOKENS_FILE: the service exits at once with one line, it does not wait for a writer', async (t) => {
  const fifo = join(t.testdir(), 'tokens.fifo')
  execFileSync('mkfifo', [fifo])
  const server = spawnServer(t, { API_TOKENS_FILE: fifo })
  t.same(await exitWithin(server, START_TIMEOUT), { code: 1, signal: null }, 'exits 1')
  t.strictSame(linesOf(server.stderr()), [
    `Invalid configuration: API_TOKENS_FILE is not a regular file; set it to a readable regular file of tokens, one a line, at most ${MAX_TOKENS_FILE_BYTES} bytes.`
  ])
})

t.test('BODY_LIMIT and MAX_TEXT_LENGTH past what a process can hold are refused, naming the variable', async (t) => {
  t.throws(() => loadConfig({ BODY_LIMIT: '99999999999999999999' }), {
    message: `Invalid configuration: BODY_LIMIT must be <= ${MAX_BODY_LIMIT}; set BODY_LIMIT to the largest request body in bytes, a positive integer, at most ${MAX_BODY_LIMIT}.`
  })
  t.throws(() => loadConfig({ MAX_TEXT_LENGTH: '9007199254740993' }), {
    message: /^Invalid configuration: MAX_TEXT_LENGTH must be <= \d+; set MAX_TEXT_LENGTH to the longest plant name or tag in characters, a positive integer, at most \d+\.$/
  })
  t.match(loadConfig({ BODY_LIMIT: String(MAX_BODY_LIMIT), MAX_TEXT_LENGTH: String(MAX_TEXT_LENGTH_LIMIT) }),
    { BODY_LIMIT: MAX_BODY_LIMIT, MAX_TEXT_LENGTH: MAX_TEXT_LENGTH_LIMIT }, 'the bounds themselves are accepted')
  // The plugin's options have the same bounds.
  t.throws(() => checkOptions({ tokens: [TOKEN], store: 'memory:', bodyLimit: 1e20 }), { message: /^plant-store: option bodyLimit is invalid/ })
  t.throws(() => checkOptions({ tokens: [TOKEN], store: 'memory:', maxTextLength: 2 ** 53 }), { message: /^plant-store: option maxTextLength is invalid/ })
})

t.test('REQUEST_TIMEOUT=0 (no limit) works with a HEADERS_TIMEOUT past Node\'s default request timeout', async (t) => {
  const env = { REQUEST_TIMEOUT: '0', HEADERS_TIMEOUT: '400000' }
  const options = connectionOptions(loadConfig(env))
  t.match(options, { requestTimeout: 0, http: { requestTimeout: 0, headersTimeout: 400000 } })
  // The app and its HTTP server as the service builds them from these settings (Node checks the two timeouts there).
  const { url } = await listening(t, {}, options)
  t.equal((await send(url, TEST_TOKEN, 'GET', '/healthz')).status, 200, 'the service starts and answers')
})

t.test('sslmode=require against a server without TLS: refused at start with one line that says why', { skip: pgSkip }, async (t) => {
  const url = new URL(await freshDatabase(t))
  url.searchParams.set('sslmode', 'require')
  const server = spawnServer(t, { DATABASE_URL: url.href, API_TOKENS: TOKEN })
  t.same(await exitWithin(server, START_TIMEOUT), { code: 1, signal: null }, 'exits 1')
  // pg's own warning (sslmode=require is taken as verify-full) comes first: the service's line is the last.
  t.match(linesOf(server.stderr()).at(-1), /^Invalid configuration: DATABASE_URL cannot be opened \(PostgreSQL: the PostgreSQL server does not support TLS, which the URL asks for \(sslmode\): enable TLS on the server, or remove sslmode from DATABASE_URL/)
})
