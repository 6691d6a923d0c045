import t from 'tap'
import {
  PlantStoreClient, PlantStoreError, ServiceUnavailableError, UnauthorizedError, UnexpectedResponseError
} from '../../client/index.js'
import { DEFAULT_RETRY, retryAfterDelay, retrySettings } from '../../client/retry.js'
import { answer, httpServer, recordedClient } from '../helpers/client.js'

t.test('an answer without an Error body is still a typed error, its body made from the status line', async (t) => {
  const url = await httpServer(t, (request, response) => {
    const status = Number(request.url!.split('/').pop())
    if (status === 502) return answer(response, 502, '<html><body>502 Bad Gateway</body></html>', { 'content-type': 'text/html' })
    if (status === 401) return answer(response, 401, '{"error":"Unauthorized"}') // another server's idea of an error
    if (status === 418) return answer(response, 418, '{"error":418}')
    if (status === 999) return response.writeHead(599, '').end() // no reason phrase
    answer(response, status, '')
  })
  const client = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false })
  const cases: Array<[number, typeof PlantStoreError, string]> = [
    [502, PlantStoreError, '502 Bad Gateway'],
    [503, ServiceUnavailableError, '503 Service Unavailable'],
    [504, PlantStoreError, '504 Gateway Timeout'],
    [401, UnauthorizedError, '401 Unauthorized'],
    [418, PlantStoreError, "418 I'm a Teapot"],
    [999, PlantStoreError, '599 Error']
  ]
  for (const [path, ErrorClass, message] of cases) {
    const error = await client.get(BigInt(path)).catch((error: unknown) => error)
    t.type(error, ErrorClass, `${path}: ${ErrorClass.name}`)
    const status = path === 999 ? 599 : path
    t.match(error, { status, message, body: { error: status, message } }, `${path}: ${message}`)
    t.equal((error as Error).name, ErrorClass.name, 'its name says its class')
  }
})

t.test('a success whose body is not what the API promises is an UnexpectedResponseError', async (t) => {
  const bodies: Record<string, string> = {
    '/plants/1': '<html>cached page</html>',
    '/plants/2': '{"name":5}',
    '/plants/3': '{"name":"x","tag":null}',
    '/plants/4': '',
    '/plants?limit=1': '[{"id":"9007199254740993","name":"x"}]',
    '/plants?limit=2': '{"plants":[]}',
    '/plants?limit=3': '[{"id":1.5,"name":"x"}]',
    '/plants?limit=4': '[null]',
    '/plants/5': '{"name":"x"}' // for DELETE, which promises no body
  }
  const url = await httpServer(t, (request, response) => answer(response, 200, bodies[request.url!]))
  const client = new PlantStoreClient({ baseUrl: url, token: 'x' })
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['GET /plants/{id}', () => client.get(1n)],
    ['GET /plants/{id}', () => client.get(2n)],
    ['GET /plants/{id}', () => client.get(3n)],
    ['GET /plants/{id}', () => client.get(4n)],
    ['GET /plants', () => client.list({ limit: 1 })],
    ['GET /plants', () => client.list({ limit: 2 })],
    ['GET /plants', () => client.list({ limit: 3 })],
    ['GET /plants', () => client.list({ limit: 4 })],
    ['DELETE /plants/{id}', () => client.delete(5n)]
  ]
  for (const [operation, call] of calls) {
    const error = await call().catch((error: unknown) => error)
    t.type(error, UnexpectedResponseError, operation)
    t.match(error, { status: 200, message: new RegExp(`^The answer to ${operation.replace(/[{}]/g, '\\$&')} is not `) })
  }
})

t.test('the iterator stops with an error where a page does not move the cursor on, rather than loop', async (t) => {
  // A cache in between that ignores the query string answers every page with the first one.
  const url = await httpServer(t, (_request, response) => answer(response, 200, '[{"id":1,"name":"a"},{"id":2,"name":"b"}]'))
  const { client, attempts } = recordedClient(url)
  const seen: bigint[] = []
  const error = await (async () => {
    for await (const plant of client.listAll({ limit: 2 })) seen.push(plant.id)
  })().catch((error: unknown) => error)
  t.type(error, UnexpectedResponseError)
  t.match(error, { message: 'GET /plants after 2 listed 2: the cursor did not move on' })
  t.strictSame(seen, [1n, 2n], 'the first page was yielded')
  t.strictSame(attempts.map(({ url }) => new URL(url).search), ['?limit=2', '?limit=2&after=2'])
})

t.test('options are checked when the client is made, each error naming the option', async (t) => {
  const make = (options: object) => () => new PlantStoreClient({ baseUrl: 'http://127.0.0.1:1', token: 'x', ...options })
  t.throws(make({ baseUrl: 'localhost:3000/' }), {
    name: 'TypeError', message: 'baseUrl must be an http: or https: URL, not "localhost:3000/"'
  }, 'a base URL without its scheme')
  t.throws(make({ baseUrl: 'not a url' }), { name: 'TypeError', message: /^baseUrl must be an absolute http: or https: URL/ })
  t.throws(make({ baseUrl: 'http://user:secret@127.0.0.1:1' }), {
    name: 'TypeError', message: 'baseUrl must not hold a user name or password: the token is the credential (fetch refuses them)'
  }, 'credentials, which fetch refuses on every call, are refused once, and not repeated in the message')
  for (const baseUrl of ['http://user@127.0.0.1:1/', 'http://127.0.0.1:1/?x=1', 'http://127.0.0.1:1/garden?', 'http://127.0.0.1:1/#top', 'http://127.0.0.1:1#']) {
    t.throws(make({ baseUrl }), { name: 'TypeError', message: /^baseUrl must not / }, baseUrl)
  }
  t.match(t.throws(make({ baseUrl: 'http://127.0.0.1:1/garden?x=1' })), {
    message: 'baseUrl must not have a query or a fragment: the client adds the path of each route to it'
  })
  // The service accepts visible ASCII only (RFC 6750's b64token is a subset): any other token can never match.
  for (const token of ['', 'two words', ' leading', 'trailing ', 'tab\t', 'two\nlines', 'caf\u00e9', 'nul\u0000', 'del\u007f']) {
    t.throws(make({ token }), {
      name: 'TypeError', message: 'token must be visible ASCII characters (! to ~), without spaces: the service accepts no other'
    }, JSON.stringify(token))
  }
  t.throws(make({ token: undefined }), { name: 'TypeError', message: /^token must be / }, 'no token at all (from JavaScript)')
  t.doesNotThrow(make({ token: '!~' + 'x'.repeat(1000) }), 'any visible ASCII')
  t.throws(make({ retry: { attempts: 0 } }), { name: 'RangeError', message: 'retry.attempts must be an integer of at least 1, not 0' })
  t.throws(make({ retry: { attempts: 1.5 } }), { name: 'RangeError', message: /^retry\.attempts / })
  t.throws(make({ retry: { baseDelay: -1 } }), { name: 'RangeError', message: 'retry.baseDelay must be a number of ms, at least 0, not -1' })
  t.throws(make({ retry: { maxDelay: Number.NaN } }), { name: 'RangeError', message: /^retry\.maxDelay / })
  t.throws(make({ retry: { maxElapsed: Infinity } }), { name: 'RangeError', message: /^retry\.maxElapsed / })
  t.doesNotThrow(make({ retry: { attempts: 1, baseDelay: 0, maxDelay: 0, maxElapsed: 0 } }))
  t.strictSame(retrySettings(), DEFAULT_RETRY, 'the defaults')
  t.strictSame(retrySettings({ attempts: 5 }), { ...DEFAULT_RETRY, attempts: 5 }, 'one changed, the others default')
  t.strictSame(retrySettings(false), { ...DEFAULT_RETRY, attempts: 1 }, 'false: one attempt')
})

t.test('Retry-After is read as delay-seconds or an HTTP date, and nothing else', async (t) => {
  const now = Date.parse('Sun, 06 Nov 1994 08:49:37 GMT')
  const cases: Array<[string | null, number | undefined]> = [
    ['0', 0],
    ['1', 1000],
    [' 120 ', 120_000],
    ['Sun, 06 Nov 1994 08:49:40 GMT', 3000], // IMF-fixdate
    ['Sunday, 06-Nov-94 08:49:42 GMT', 5000], // RFC 850, obsolete but allowed
    ['Sun Nov  6 08:49:39 1994', 2000 - new Date(now).getTimezoneOffset() * 60_000], // asctime, read as local time
    ['Sun, 06 Nov 1994 08:49:00 GMT', 0], // in the past: at once
    [null, undefined],
    ['', undefined],
    ['soon', undefined],
    ['-1', undefined],
    ['1.5', undefined],
    ['1e3', undefined]
  ]
  for (const [header, delay] of cases) t.equal(retryAfterDelay(header, now), delay, JSON.stringify(header))
  t.ok(Math.abs(retryAfterDelay(new Date(Date.now() + 10_000).toUTCString())! - 10_000) <= 1000, 'relative to now by default')
})
