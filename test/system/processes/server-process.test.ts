import { setTimeout as sleep } from 'node:timers/promises'
import { randomBytes } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { pool } from '../../helpers/load.js'
import {
  exitWithin, idleConnection, linesOf, rawRequest, slowPost, spawnServer, startServer, START_TIMEOUT, type Exit, type LogLine,
  type ServerProcess
} from '../../helpers/server-process.js'
import { settlesWithin } from '../../helpers/time.js'

const TOKEN = 'test-token-server-process'
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const json = { 'content-type': 'application/json' }
const CHALLENGE = 'Bearer realm="plant-store"'

/** A token that cannot be mistaken for any other string in the logs. */
const uniqueToken = (label: string) => `${label}-${randomBytes(12).toString('hex')}`

async function createPlant (url: string, token: string, id: string, name: string) {
  return fetch(`${url}/plants`, {
    method: 'POST',
    headers: { ...json, ...bearer(token) },
    body: `{"id":${id},"name":${JSON.stringify(name)}}`
  })
}

/** SIGTERM, then the exit, which must come soon and be clean. */
async function stop (t: Test, server: ServerProcess) {
  server.child.kill('SIGTERM')
  const exit = await exitWithin(server, 10_000)
  t.same(exit, { code: 0, signal: null }, 'exits with code 0 on SIGTERM')
}

t.test('starts on PORT=0 with a new SQLite file and answers over a real socket', async (t) => {
  // Only the default ./data is made: any other folder must exist (a mistyped path is refused).
  const file = join(t.testdir({}), 'plants.db')
  t.notOk(existsSync(file), 'the file does not exist before start-up')

  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const port = Number(new URL(server.url).port)
  t.ok(port > 0 && port <= 65535, `logged the port it chose (${port})`)
  t.ok(statSync(file).isFile(), 'the SQLite file was created')

  const health = await fetch(`${server.url}/healthz`)
  t.equal(health.status, 200, 'GET /healthz is 200')
  t.same(await health.json(), { status: 'ok' })

  const created = await createPlant(server.url, TOKEN, '1', 'fern')
  t.equal(created.status, 200, 'POST /plants with the bearer token is 200')
  t.same(await created.json(), { name: 'fern' }, 'the reply is the Plant, without its id')

  const read = await fetch(`${server.url}/plants/1`, { headers: bearer(TOKEN) })
  t.equal(read.status, 200)
  t.same(await read.json(), { name: 'fern' }, 'the plant can be read back')

  const anonymous = await createPlant(server.url, 'not-the-token', '2', 'moss')
  t.equal(anonymous.status, 401, 'a wrong token is refused')
  await anonymous.body?.cancel()

  await stop(t, server)
  t.equal(server.stderr(), '', 'nothing on stderr when tokens are configured')
})

t.test('SIGTERM finishes the request in flight, then exits 0', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  // A long grace period: only the request in flight, not an idle connection, may hold the exit back.
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN, SHUTDOWN_TIMEOUT: '60000' })

  // A keep-alive connection left idle after its response, as a client's pool would.
  const idle = await idleConnection(server.url)
  t.teardown(() => idle.destroy())

  // The headers and half the body now, the rest after SIGTERM: the request is in flight throughout.
  const body = '{"id":42,"name":"sent slowly while the server shuts down"}'
  const half = Math.floor(body.length / 2)
  const request = slowPost(`${server.url}/plants`, { ...json, ...bearer(TOKEN) }, body.slice(0, half),
    Buffer.byteLength(body))
  // No log line marks a request's start at info: give the server a moment to read the headers.
  await sleep(300)

  server.child.kill('SIGTERM')
  const shutdown = await server.waitForLog((line) => /shutting down/i.test(line.msg ?? ''), 10_000)
  t.equal(shutdown.level, 30, `logs the shutdown at info: "${shutdown.msg}"`)

  t.ok(await settlesWithin(idle.closed, 5_000), 'the idle keep-alive connection is closed at once')

  // No new request is served any more: refused at connect, or answered 503 while closing.
  let stoppedAccepting = false
  for (let attempt = 0; attempt < 100 && !stoppedAccepting; attempt++) {
    try {
      const late = await fetch(`${server.url}/healthz`, { headers: { connection: 'close' } })
      await late.body?.cancel()
      stoppedAccepting = late.status === 503
    } catch {
      stoppedAccepting = true
    }
    if (!stoppedAccepting) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(stoppedAccepting, 'new requests are no longer served after SIGTERM')
  t.ok(server.child.exitCode === null && server.child.signalCode === null,
    'the process waits for the request in flight')

  const response = await request.finish(body.slice(half))
  t.equal(response.status, 200, 'the request in flight still gets its 200')
  t.same(JSON.parse(response.body), { name: 'sent slowly while the server shuts down' }, 'with its full body')

  const exit = await exitWithin(server, 5_000)
  t.same(exit, { code: 0, signal: null }, 'then exits with code 0, well within SHUTDOWN_TIMEOUT')

  // The 200 meant stored: the plant is in the file the server closed.
  const db = new Database(file, { readonly: true })
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT name FROM plants WHERE id = 42').all(), [{ name: 'sent slowly while the server shuts down' }],
    'the plant created during shutdown is in the SQLite file')
})

t.test('without API_TOKENS a token is generated and printed once on stderr', async (t) => {
  const server = await startServer(t, {})
  // The line follows the listening log line; give it a moment to arrive.
  for (let waited = 0; server.stderr() === '' && waited < 5000; waited += 50) await sleep(50)
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, 'exactly one line on stderr')
  const match = /token (\S+)$/.exec(lines[0] ?? '')
  t.ok(match, `the line gives the token: ${lines[0]}`)
  const token = match?.[1] ?? 'missing'
  t.ok(token.length >= 16, 'the token is long enough to guess')
  t.throws(() => JSON.parse(lines[0] ?? ''), 'the stderr line is plain text, not JSON')

  const accepted = await createPlant(server.url, token, '7', 'ivy')
  t.equal(accepted.status, 200, 'the generated token is accepted')
  await accepted.body?.cancel()
  const refused = await createPlant(server.url, `${token}x`, '8', 'ivy')
  t.equal(refused.status, 401, 'another token is refused')
  await refused.body?.cancel()

  await stop(t, server)
  t.notOk(server.stdout().includes(token), 'the token is not in the JSON log')
  t.equal(linesOf(server.stderr()).length, 1, 'and printed only once')
})

t.test('bad configuration exits at once with one line naming the variable', async (t) => {
  const dir = t.testdir({ 'file.txt': 'a regular file, not a folder\n', 'tokens.txt': 'fine-token\nseedling-\u{1f331}\n' })
  const cases: Array<{ variable: string, env: Record<string, string> }> = [
    { variable: 'PORT', env: { PORT: '99999' } },
    { variable: 'PORT', env: { PORT: 'abc' } },
    { variable: 'LOG_LEVEL', env: { LOG_LEVEL: 'loud' } },
    { variable: 'HOST', env: { HOST: 'bad_host!' } },
    { variable: 'BODY_LIMIT', env: { BODY_LIMIT: '0' } },
    { variable: 'DATABASE_URL', env: { DATABASE_URL: 'mysql://x' } },
    { variable: 'API_TOKENS_FILE', env: { API_TOKENS_FILE: join(dir, 'no-such-tokens.txt') } },
    { variable: 'DATABASE_URL', env: { DATABASE_URL: `sqlite:${join(dir, 'file.txt', 'x.db')}` } },
    // Without tokens too: the generated token is printed only once the service is up.
    { variable: 'DATABASE_URL', env: { API_TOKENS: '', DATABASE_URL: `sqlite:${join(dir, 'file.txt', 'y.db')}` } },
    // Longer than a Node timer can hold: it would fire after 1 ms.
    { variable: 'SHUTDOWN_TIMEOUT', env: { SHUTDOWN_TIMEOUT: String(2 ** 31) } },
    // A token no HTTP client can send could never match.
    { variable: 'API_TOKENS', env: { API_TOKENS: 'fine-token,caf\u00e9-token' } },
    { variable: 'API_TOKENS_FILE', env: { API_TOKENS_FILE: join(dir, 'tokens.txt') } }
  ]
  // Two at a time, one a core: each pays for the TypeScript loader (its settings are read once
  // every module is loaded), and more at once only makes each slower, not the whole case faster
  // (4 at a time: the slowest exit 26-30 s on a loaded machine; 2: 13-18 s, the case as long).
  const runs = new Map<number, { server: ReturnType<typeof spawnServer>, exit: Exit }>()
  await pool(cases.length, 2, async (index) => {
    const server = spawnServer(t, { API_TOKENS: TOKEN, ...cases[index].env })
    runs.set(index, { server, exit: await exitWithin(server, START_TIMEOUT) })
  })
  for (const [index, { variable, env }] of cases.entries()) {
    const { server, exit: { code, signal } } = runs.get(index)!
    const label = Object.entries(env).map(([name, value]) => `${name}=${value}`).join(' ')
    t.ok(code !== null && code !== 0 && signal === null, `${label}: exits non-zero (code ${code}, signal ${signal})`)
    const lines = linesOf(server.stderr())
    t.equal(lines.length, 1, `${label}: exactly one line on stderr:\n${server.stderr()}`)
    t.match(lines[0] ?? '', variable, `${label}: the line names ${variable}`)
    t.notMatch(server.stdout(), /Server listening/, `${label}: it never listened`)
    t.notMatch(lines[0] ?? '', /token/i.test(variable) ? /caf\u00e9|seedling/ : /(?!)/, `${label}: the line does not show a token`)
  }
})

t.test('API_TOKENS_FILE and API_TOKENS are both accepted', async (t) => {
  const dir = t.testdir({ 'tokens.txt': '\n  file-token-one  \n\nfile-token-two\n   \n\tfile-token-three\t\n' })
  const server = await startServer(t, {
    API_TOKENS: ' env-token-one , env-token-two,',
    API_TOKENS_FILE: join(dir, 'tokens.txt')
  })
  t.equal(server.stderr(), '', 'no generated token')
  const accepted = ['file-token-one', 'file-token-two', 'file-token-three', 'env-token-one', 'env-token-two']
  for (const token of accepted) {
    const response = await fetch(`${server.url}/plants`, { headers: bearer(token) })
    t.equal(response.status, 200, `${token} is accepted`)
    await response.body?.cancel()
  }
  for (const token of ['file-token', 'env-token-one ,', 'file-token-one  ']) {
    const response = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer "${token}"` } })
    t.equal(response.status, 401, `${JSON.stringify(token)} is refused`)
    await response.body?.cancel()
  }
  await stop(t, server)
})

t.test('tokens never appear in the logs, and a refused request is not an error', async (t) => {
  const valid = uniqueToken('valid')
  const invalid = uniqueToken('invalid')
  const server = await startServer(t, { API_TOKENS: valid, LOG_LEVEL: 'trace' })

  const created = await createPlant(server.url, valid, '5', 'aloe')
  t.equal(created.status, 200)
  await created.body?.cancel()
  const read = await fetch(`${server.url}/plants/5`, { headers: { authorization: `bearer ${valid}` } })
  t.equal(read.status, 200)
  await read.body?.cancel()

  const refusedRequests = [
    () => createPlant(server.url, invalid, '6', 'cactus'),
    () => fetch(`${server.url}/plants/5`, { headers: bearer(invalid) }),
    () => fetch(`${server.url}/plants`, { headers: { authorization: `Basic ${invalid}` } }),
    // The valid token with one character more: the log must not hold that either.
    () => fetch(`${server.url}/plants`, { headers: bearer(`${valid}x`) })
  ]
  for (const send of refusedRequests) {
    const response = await send()
    t.equal(response.status, 401, 'refused')
    await response.body?.cancel()
  }
  await stop(t, server)

  const stdout = server.stdout()
  const completed = server.logs().filter((line) => line.msg === 'request completed')
  const statusOf = (line: LogLine) => line.statusCode
  const refusedIds = new Set(completed.filter((line) => statusOf(line) === 401).map((line) => line.reqId))
  t.equal(refusedIds.size, refusedRequests.length, 'every refused request was logged')
  const refusedLines = server.logs().filter((line) => refusedIds.has(line.reqId))
  t.equal(refusedLines.filter((line) => /^request refused/.test(line.msg ?? '')).length, refusedIds.size,
    'each refusal is logged once, as "request refused"')
  t.same(refusedLines.filter((line) => line.level >= 50), [], 'no refused request is logged at error or above')
  t.same(server.logs().filter((line) => line.level >= 50), [], 'nothing at all is logged at error or above')

  t.notOk(stdout.includes(invalid), 'the invalid token is nowhere on stdout')
  t.notOk(stdout.includes(valid), 'the valid token is nowhere on stdout')
  t.notOk(server.stderr().includes(valid) || server.stderr().includes(invalid), 'nor on stderr')
})

t.test('at trace, no token sent anywhere in a request reaches the log', async (t) => {
  const valid = uniqueToken('valid')
  const server = await startServer(t, { API_TOKENS: valid, LOG_LEVEL: 'trace', RATE_LIMIT_MAX: '1000' })
  const host = new URL(server.url).host
  const sent: string[] = []
  /** A token of its own for each place it is sent from, so that a leak names its place. */
  const leak = (place: string) => {
    const token = uniqueToken(place)
    sent.push(token)
    return token
  }
  const requests: Array<[string, RequestInit?]> = [
    [`/plants?access_token=${leak('query-anonymous')}`],
    [`/plants?access_token=${leak('query-beside-header')}`, { headers: bearer(valid) }],
    [`/plants?limit=${leak('query-bad-limit')}`, { headers: bearer(valid) }],
    [`/nowhere?access_token=${leak('query-unknown-route')}`],
    [`/plants/%zz?access_token=${leak('query-bad-url')}`, { headers: bearer(valid) }],
    [`/healthz?access_token=${leak('query-health')}`],
    ['/plants', { method: 'POST', headers: { ...json, ...bearer(valid) }, body: `{"id":1,"name":"n","access_token":"${leak('body')}"}` }],
    ['/plants', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `access_token=${leak('form-body')}` }],
    ['/plants', { headers: bearer(leak('header-unknown')) }]
  ]
  for (const [path, init] of requests) {
    const response = await fetch(`${server.url}${path}`, init)
    await response.body?.cancel()
  }
  // Written by hand: two Authorization headers, and one in the trailers of a chunked body.
  await rawRequest(server.url, ['GET /plants HTTP/1.1', `Host: ${host}`, `Authorization: Bearer ${valid}`, `Authorization: Bearer ${leak('second-header')}`])
  await stop(t, server)

  const output = server.stdout() + server.stderr()
  t.ok(server.logs().some((line) => line.level === 10 || line.level === 20), 'the log holds lines below info')
  t.same(sent.filter((token) => output.includes(token)).map((token) => token.split('-').slice(0, -1).join('-')), [],
    'no token sent in a query string, a body or a header is in the log')
  t.notOk(output.includes(valid), 'nor the valid token')
  t.ok(server.logs().some((line) => line.url === '/plants'), 'the access log gives the path, without its query string')
})

t.test('a request with two Authorization headers is refused', async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN })
  const host = new URL(server.url).host
  const post = (id: number, authorization: string[]) => rawRequest(server.url, [
    'POST /plants HTTP/1.1',
    `Host: ${host}`,
    ...authorization,
    'Content-Type: application/json'
  ], `{"id":${id},"name":"twice"}`)

  const single = await post(1, [`Authorization: Bearer ${TOKEN}`])
  t.equal(single.status, 200, 'the same request with one header is accepted (the token is valid)')

  for (const headers of [
    [`Authorization: Bearer ${TOKEN}`, `Authorization: Bearer ${TOKEN}`],
    [`Authorization: Bearer ${TOKEN}`, `authorization: Bearer ${TOKEN}`]
  ]) {
    const twice = await post(2, headers)
    t.equal(twice.status, 401, `${headers.join(' + ')}: 401`)
    t.same(JSON.parse(twice.body), { error: 401, message: JSON.parse(twice.body).message }, 'Error-shaped body')
    t.type(JSON.parse(twice.body).message, 'string', 'with a message')
    t.equal(twice.headers['www-authenticate']?.length, 1, 'one WWW-Authenticate header')
    t.equal(twice.headers['www-authenticate']?.[0], CHALLENGE, 'WWW-Authenticate: Bearer realm="plant-store"')
  }

  const notCreated = await fetch(`${server.url}/plants/2`, { headers: bearer(TOKEN) })
  t.equal(notCreated.status, 404, 'the refused request stored nothing')
  await notCreated.body?.cancel()
  await stop(t, server)
})

t.test('a port already in use: exits non-zero with one line', async (t) => {
  const first = await startServer(t, { API_TOKENS: TOKEN })
  const second = spawnServer(t, { API_TOKENS: TOKEN, PORT: new URL(first.url).port })
  // It fails to listen once every module is loaded: as long as a start.
  const { code } = await exitWithin(second, START_TIMEOUT)
  t.not(code, 0, 'exits non-zero')
  const lines = linesOf(second.stderr())
  t.equal(lines.length, 1, `exactly one line on stderr:\n${second.stderr()}`)
  t.match(lines[0] ?? '', /^Cannot start: .*EADDRINUSE/)
})
