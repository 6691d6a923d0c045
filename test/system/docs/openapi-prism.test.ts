import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { StoreUnavailableError } from '../../../plugins/http/errors.js'
import { createMemoryStore } from '../../../plugins/store/memory/store.js'
import type { PlantStore } from '../../../plugins/store/types.js'
import { build, TOKEN } from '../../helpers/app.js'

/**
 * The service behind Prism in proxy mode with --errors: Prism checks each request against the
 * served OpenAPI document, forwards it, and checks the answer against the document too; a
 * violation becomes Prism's own 500 with an `sl-violations` header. Prism reads JSON as doubles,
 * so the ids here stay within ±2^53 (the exact int64 wire is tested elsewhere).
 */

const PRISM = join(import.meta.dirname, '..', '..', '..', 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js')
const START_TIMEOUT = 90_000 // generous: a busy shared machine
const RATE_LIMIT = 100
const LIMITED_TOKEN = 'a-token-that-runs-out'
const BIG = 9007199254740991 // 2^53 - 1
const BUG_ID = 500 // the test's store fails on these ids as a host's store might
const DOWN_ID = 503

const missing = !existsSync(PRISM)
if (missing && process.env.CI === 'true') t.fail('@stoplight/prism-cli is missing, but npm ci installs it')

/** Starts Prism in front of `upstream` with these flags; its address. */
async function startPrism (t: Test, upstream: string, flags: string[]): Promise<string> {
  // Prism runs plainly: without tap's loaders and coverage, which are for this project's code.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) =>
    name !== 'NODE_OPTIONS' && name !== 'NODE_V8_COVERAGE' && !name.startsWith('_TAPJS')))
  const child = spawn(process.execPath, [
    PRISM, 'proxy', '--errors', ...flags, '-h', '127.0.0.1', '-p', '0', `${upstream}/documentation/json`, upstream
  ], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const stop = () => { child.kill() }
  t.teardown(stop)
  process.once('exit', stop) // also when the test run itself is cut short
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start in ${START_TIMEOUT} ms:\n${output}`)), START_TIMEOUT)
    const read = (chunk: Buffer) => {
      output += chunk.toString()
      const address = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      if (address !== undefined) {
        clearTimeout(timer)
        resolve(address)
      }
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`Prism exited (${code}):\n${output}`))
    })
  })
}

interface Case {
  title: string
  method?: string
  path: string
  token?: string | null
  body?: string
  type?: string
  status: number
}

async function send (base: string, { method = 'GET', path, token = TOKEN, body, type = 'application/json' }: Case) {
  const headers: Record<string, string> = {}
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = type
  return fetch(`${base}${path}`, { method, headers, body })
}

/** Each case, in order, through Prism: the status expected, no violation, and a JSON body where there is one. */
async function check (t: Test, base: string, cases: Case[]) {
  for (const testCase of cases) {
    const response = await send(base, testCase)
    const text = await response.text()
    const { title, status } = testCase
    t.equal(response.status, status, `${title}: ${status}`)
    t.equal(response.headers.get('sl-violations'), null, `${title}: as the document says`, { text })
    if (status !== 204) t.match(response.headers.get('content-type'), /^application\/json/, `${title}: JSON`)
  }
}

t.test('behind Prism (proxy mode, --errors), every documented status is answered as the served document says', {
  skip: missing ? '@stoplight/prism-cli is not installed (npm install)' : false,
  timeout: 4 * START_TIMEOUT
}, async (t) => {
  const memory = createMemoryStore()
  let storeDown = false
  const store: PlantStore = {
    ...memory,
    async get (id) {
      if (id === BigInt(BUG_ID)) throw new Error('a bug in a store')
      if (id === BigInt(DOWN_ID)) throw new StoreUnavailableError()
      return memory.get(id)
    },
    async ping () {
      if (storeDown) throw new StoreUnavailableError()
    }
  }
  const { app } = await build(t, {
    store, tokens: [TOKEN, LIMITED_TOKEN], rateLimit: { max: RATE_LIMIT, timeWindow: 60 * 60_000 }
  })
  const service = await app.listen({ host: '127.0.0.1', port: 0 })
  // One Prism validates requests too (the document's own refusals never reach the service); the other
  // only answers, so that the service's answers to what the document refuses are checked as well.
  const [strict, answersOnly] = await Promise.all([
    startPrism(t, service, []),
    startPrism(t, service, ['--validate-request', 'false'])
  ])

  await check(t, strict, [
    { title: 'liveness', path: '/healthz', token: null, status: 200 },
    { title: 'readiness', path: '/readyz', token: null, status: 200 },
    { title: 'create', method: 'POST', path: '/plants', body: `{"id":${BIG},"name":"Monstera","tag":"tropical"}`, status: 200 },
    { title: 'create a taken id', method: 'POST', path: '/plants', body: `{"id":${BIG},"name":"Other"}`, status: 409 },
    { title: 'create a negative id', method: 'POST', path: '/plants', body: `{"id":-${BIG},"name":"Fern"}`, status: 200 },
    { title: 'read', path: `/plants/${BIG}`, status: 200 },
    { title: 'list', path: '/plants', status: 200 },
    { title: 'list a page', path: `/plants?limit=1&after=-${BIG}`, status: 200 },
    { title: 'a __proto__ key', method: 'POST', path: '/plants', body: '{"id":2,"name":"n","__proto__":{"admin":true}}', status: 400 },
    { title: 'a limit not in decimal digits', path: '/plants?limit=1e2', status: 400 },
    { title: 'an id not in decimal digits', path: '/plants/1e2', status: 400 },
    { title: 'delete an id not in decimal digits', method: 'DELETE', path: '/plants/1e2', status: 400 },
    { title: 'a token not accepted', method: 'POST', path: '/plants', token: 'wrong', body: '{"id":2,"name":"n"}', status: 401 },
    { title: 'read a missing plant', path: '/plants/7', status: 404 },
    { title: 'delete', method: 'DELETE', path: `/plants/-${BIG}`, status: 204 },
    { title: 'delete a missing plant', method: 'DELETE', path: `/plants/-${BIG}`, status: 404 },
    { title: 'a body over BODY_LIMIT', method: 'POST', path: '/plants', body: JSON.stringify({ id: 3, name: 'n', padding: 'x'.repeat(1_100_000) }), status: 413 },
    { title: 'a failing store', path: `/plants/${BUG_ID}`, status: 500 },
    { title: 'an unavailable store', path: `/plants/${DOWN_ID}`, status: 503 }
  ])

  storeDown = true
  await check(t, strict, [{ title: 'readiness without a store', path: '/readyz', token: null, status: 503 }])
  storeDown = false

  for (let index = 0; index < RATE_LIMIT; index++) {
    await send(service, { title: 'use up the limit', path: '/plants/7', token: LIMITED_TOKEN, status: 404 })
  }
  const limited: Case = { title: 'over the rate limit', path: '/plants/7', token: LIMITED_TOKEN, status: 429 }
  await check(t, strict, [limited])
  t.ok(Number((await send(service, limited)).headers.get('retry-after')) > 0, 'with Retry-After')

  await check(t, answersOnly, [
    { title: 'a text/plain body', method: 'POST', path: '/plants', type: 'text/plain', body: '{"id":4,"name":"n"}', status: 415 },
    { title: 'an empty body', method: 'POST', path: '/plants', body: '', status: 400 },
    { title: 'an id as a string', method: 'POST', path: '/plants', body: '{"id":"4","name":"n"}', status: 400 },
    { title: 'a name too long', method: 'POST', path: '/plants', body: JSON.stringify({ id: 4, name: 'x'.repeat(1001) }), status: 400 },
    { title: 'a name with U+0000', method: 'POST', path: '/plants', body: '{"id":4,"name":"a\\u0000"}', status: 400 },
    { title: 'a limit of 0', path: '/plants?limit=0', status: 400 },
    { title: 'a cursor that is not an id', path: '/plants?after=x', status: 400 },
    { title: 'a path id that is not an id', path: '/plants/abc', status: 400 },
    { title: 'delete a path id that is not an id', method: 'DELETE', path: '/plants/abc', status: 400 }
  ])

  // The check can fail: a plant stored before names had a maximum breaks the document's maxLength.
  await memory.create({ id: 8n, name: 'x'.repeat(1001) })
  const violation = await send(strict, { title: 'a name past the maximum', path: '/plants/8', status: 200 })
  t.equal(violation.status, 500, 'Prism refuses an answer the document does not allow')
  t.match(violation.headers.get('sl-violations'), /maxLength|must NOT have more than/)
})
