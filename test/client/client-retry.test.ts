import { createServer, type AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import {
  InvalidRequestError, PlantExistsError, PlantStoreClient, PlantStoreError, RateLimitedError, ServiceUnavailableError,
  stringifyExactJson, type NewPlant
} from '../../client/index.js'
import { TOKEN } from '../helpers/app.js'
import {
  answer, faultyProxy, forward, httpServer, listeningService, recordedClient, relay, trace, type Handler
} from '../helpers/client.js'

const UNAVAILABLE = JSON.stringify({ error: 503, message: 'The plant store is unavailable, try again later' })
const RATE_LIMITED = JSON.stringify({ error: 429, message: 'Too many requests for this token, try again later' })
const FERN = { name: 'Fern', tag: 'green' }

/** The URL of a local port that nothing listens on. */
const freePortUrl = () => new Promise<string>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resolve(`http://127.0.0.1:${port}`))
  })
})

// Timers never fire early (to the ms); a busy machine may make them late, never by this much.
const EARLY = 2
const LATE = 400

t.test('503 and 429 are retried after the wait Retry-After asks for, in seconds or as an HTTP date', async (t) => {
  let requests = 0
  let dateSent = 0
  const url = await httpServer(t, (_request, response) => {
    requests++
    if (requests === 1) return answer(response, 503, UNAVAILABLE, { 'retry-after': '1' })
    if (requests === 2) {
      // Two seconds ahead, to the second an HTTP date carries: the wait is between 1 and 2 s.
      dateSent = Math.floor(Date.now() / 1000) * 1000 + 2000
      return answer(response, 429, RATE_LIMITED, { 'retry-after': new Date(dateSent).toUTCString() })
    }
    answer(response, 200, JSON.stringify(FERN))
  })
  const { client, attempts, waits } = recordedClient(url)
  const started = Date.now()
  t.strictSame(await client.get(1n), FERN, 'the third attempt is answered')
  t.strictSame(attempts.map(({ status }) => status), [503, 429, 200])
  const [first, second] = waits()
  t.comment(`waits: ${first.toFixed(0)} ms after Retry-After: 1, ${second.toFixed(0)} ms after an HTTP date`)
  t.ok(first >= 1000 - EARLY && first < 1000 + LATE, `about 1 s after "Retry-After: 1" (${first.toFixed(0)} ms)`)
  const asked = dateSent - (started + attempts[1].answered - attempts[0].sent)
  t.ok(second >= asked - 50 && second < asked + LATE, `until the date (${second.toFixed(0)} ms, asked ${asked.toFixed(0)})`)
})

t.test('without Retry-After the waits are a jittered exponential backoff, and the attempts are bounded', async (t) => {
  const url = await httpServer(t, (_request, response) => answer(response, 503, UNAVAILABLE))
  const { client, attempts, waits } = recordedClient(url, { retry: { attempts: 5, baseDelay: 40, maxDelay: 100 } })
  const error = await client.list().catch((error: unknown) => error)
  t.type(error, ServiceUnavailableError, 'the last answer is thrown as a typed error')
  t.match(error, { status: 503, body: JSON.parse(UNAVAILABLE), retryAfter: undefined })
  t.equal(attempts.length, 5, 'five attempts in all')
  const bounds = [[20, 40], [40, 80], [50, 100], [50, 100]] // half to all of 40, 80, then the 100 ms cap
  waits().forEach((wait, index) => {
    const [low, high] = bounds[index]
    t.ok(wait >= low - EARLY && wait < high + LATE, `retry ${index + 1}: ${wait.toFixed(0)} ms, from ${low} to ${high}`)
  })
})

t.test('no retry starts past maxElapsed: a long Retry-After ends the call at once with the error', async (t) => {
  const url = await httpServer(t, (_request, response) => answer(response, 429, RATE_LIMITED, { 'retry-after': '5' }))
  const { client, attempts } = recordedClient(url, { retry: { maxElapsed: 2000 } })
  const started = performance.now()
  const error = await client.get(1n).catch((error: unknown) => error)
  t.type(error, RateLimitedError)
  t.match(error, { status: 429, body: JSON.parse(RATE_LIMITED), retryAfter: 5000 }, 'it says how long to wait')
  t.equal(attempts.length, 1, 'one attempt')
  t.ok(performance.now() - started < 1000, 'no wait')
})

t.test('retry: false sends one attempt; attempts: 1 too', async (t) => {
  const url = await httpServer(t, (_request, response) => answer(response, 503, UNAVAILABLE, { 'retry-after': '0' }))
  for (const retry of [false, { attempts: 1 }] as const) {
    const { client, attempts } = recordedClient(url, { retry })
    await t.rejects(client.delete(1n), ServiceUnavailableError, JSON.stringify(retry))
    t.equal(attempts.length, 1, JSON.stringify(retry))
  }
})

t.test('an abort ends the call at once, while it waits to retry, while a request is in flight, or before', async (t) => {
  let thirdAnswered = false
  const url = await httpServer(t, (request, response) => {
    if (request.url === '/plants/1') answer(response, 503, UNAVAILABLE, { 'retry-after': '10' })
    if (request.url === '/plants/3') {
      if (thirdAnswered) answer(response, 200, JSON.stringify(FERN))
      else answer(response, 503, UNAVAILABLE, { 'retry-after': '0' })
      thirdAnswered = true
    }
    // /plants/2 is never answered.
  })
  const { client, attempts } = recordedClient(url)
  for (const path of [1n, 2n]) {
    const reason = new Error(`stop ${path}`)
    const controller = new AbortController()
    const started = performance.now()
    setTimeout(() => controller.abort(reason), 100)
    const error = await client.get(path, { signal: controller.signal }).catch((error: unknown) => error)
    const elapsed = performance.now() - started
    t.equal(error, reason, `GET /plants/${path} rejects with the signal's reason`)
    t.ok(elapsed >= 100 - EARLY && elapsed < 100 + LATE, `after ${elapsed.toFixed(0)} ms`)
  }
  t.equal(attempts.length, 2, 'one request each')
  await t.rejects(client.get(1n, { signal: AbortSignal.abort() }), { name: 'AbortError' }, 'an aborted signal sends nothing')
  t.equal(attempts.length, 2)
  t.strictSame(await client.get(3n, { signal: new AbortController().signal }), FERN, 'a signal not aborted changes nothing')
  t.equal(attempts.length, 4, 'retried once')
})

t.test('a network failure is retried: no answer at all is like a 503', async (t) => {
  let requests = 0
  const url = await httpServer(t, (request, response) => {
    if (++requests === 1) request.socket.destroy()
    else answer(response, 200, JSON.stringify(FERN))
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  t.strictSame(await client.get(1n), FERN)
  t.strictSame(attempts.map(({ status }) => status), [undefined, 200], 'the first got no answer')

  // Nothing listens there: every attempt fails, and the last failure is thrown.
  const nowhere = recordedClient(await freePortUrl(), { retry: { baseDelay: 10 } })
  await t.rejects(nowhere.client.list(), { name: 'TypeError', message: 'fetch failed' }, "fetch's own error")
  t.equal(nowhere.attempts.length, 3, 'three attempts')
})

t.test('the real service with a rate limit: 429 with Retry-After, waited for, then answered', async (t) => {
  const url = await listeningService(t, { rateLimit: { max: 2, timeWindow: 1000 } })
  const { client, attempts, waits } = recordedClient(url)
  // A create refused by the rate limit never ran: it is retried like any other request.
  t.strictSame(await client.create({ id: 1n, ...FERN }), FERN)
  t.strictSame(await client.get(1n), FERN)
  t.strictSame(await client.create({ id: 2n, name: 'Agave' }), { name: 'Agave' }, 'the third request waits for the next window')
  t.strictSame(trace(attempts), ['POST 200', 'GET 200', 'POST 429', 'POST 200'])
  const wait = waits()[2]
  t.ok(wait >= 1000 - EARLY && wait < 1000 + LATE, `waited ${wait.toFixed(0)} ms for "Retry-After: 1"`)

  const impatient = new PlantStoreClient({ baseUrl: url, token: TOKEN, retry: false })
  const error = await impatient.get(2n).then(() => impatient.get(2n)).then(() => impatient.get(2n)).catch((error: unknown) => error)
  t.type(error, RateLimitedError)
  t.match(error, { status: 429, body: JSON.parse(RATE_LIMITED), retryAfter: 1000 }, "the service's body and its Retry-After")
})

// The service carries the request out, but the client is told 503: a PostgreSQL commit that
// completed after the service gave up waiting for it, or a proxy that lost the answer.
const carriedOutThen503 = (service: string): Handler => async (request, response, body) => {
  await forward(service, request, body)
  answer(response, 503, UNAVAILABLE)
}

t.test('a create whose 503 hid a commit meets 409 on its retry, reads the plant back and resolves', async (t) => {
  const service = await listeningService(t)
  const { url } = await faultyProxy(t, service, 'POST', carriedOutThen503(service))
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  t.strictSame(await client.create({ id: 2n ** 53n + 1n, ...FERN }), FERN, 'resolves with the stored plant')
  t.strictSame(trace(attempts), ['POST 503', 'POST 409', 'GET 200'])
  t.strictSame(await client.list(), [{ id: 2n ** 53n + 1n, ...FERN }], 'stored once')
})

t.test('a create whose connection failed after the commit resolves the same way', async (t) => {
  const service = await listeningService(t)
  const { url } = await faultyProxy(t, service, 'POST', async (request, _response, body) => {
    await forward(service, request, body)
    request.socket.destroy()
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  t.strictSame(await client.create({ id: -(2n ** 63n), name: 'Moss' }), { name: 'Moss' })
  t.strictSame(trace(attempts), ['POST undefined', 'POST 409', 'GET 200'])
})

t.test('a create retried after 503 that meets another plant with its id throws the 409', async (t) => {
  const service = await listeningService(t)
  const other = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  let createdMeanwhile: NewPlant
  // The client's first POST is not carried out; meanwhile someone else creates a plant with its id.
  const proxy = await faultyProxy(t, service, 'POST', async (_request, response) => {
    await other.create(createdMeanwhile)
    answer(response, 503, UNAVAILABLE)
  })
  const { client, attempts } = recordedClient(proxy.url, { retry: { baseDelay: 10 } })
  const cases: Array<[NewPlant, NewPlant]> = [
    [{ id: 5n, name: 'Cactus' }, { id: 5n, ...FERN }],
    [{ id: 6n, name: 'Fern' }, { id: 6n, ...FERN }],
    [{ id: 7n, ...FERN }, { id: 7n, name: 'Fern' }]
  ]
  for (const [stored, sent] of cases) {
    proxy.rearm()
    createdMeanwhile = stored
    attempts.length = 0
    const error = await client.create(sent).catch((error: unknown) => error)
    t.type(error, PlantExistsError, `sent ${stringifyExactJson(sent)}, stored ${stringifyExactJson(stored)}`)
    t.match(error, { status: 409, body: { error: 409, message: 'A plant with this id already exists' } })
    t.strictSame(trace(attempts), ['POST 503', 'POST 409', 'GET 200'])
    const { id, ...plant } = stored
    t.strictSame(await other.get(id), plant, 'the other plant stays, unchanged')
  }
})

t.test('a create whose plant is gone again at the read-back, or whose read-back fails, throws', async (t) => {
  const service = await listeningService(t)
  const other = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  const inner = await faultyProxy(t, service, 'POST', carriedOutThen503(service))
  // In front of it, a proxy whose first read-back is preceded by a delete of the plant.
  const { url } = await faultyProxy(t, inner.url, 'GET', async (request, response, body) => {
    await other.delete(8n)
    await relay(service, request, response, body)
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  await t.rejects(client.create({ id: 8n, name: 'Ivy' }), PlantExistsError, 'deleted before the read-back: the 409 stands')
  t.strictSame(trace(attempts), ['POST 503', 'POST 409', 'GET 404'])

  inner.rearm()
  const failing = await faultyProxy(t, inner.url, 'GET', (_request, response) =>
    answer(response, 500, '{"error":500,"message":"Internal server error"}'))
  const { client: unlucky } = recordedClient(failing.url, { retry: { baseDelay: 10 } })
  await t.rejects(unlucky.create({ id: 9n, name: 'Ivy' }), { status: 500, message: 'Internal server error' }, "the read's error")
})

t.test('a create is not retried, nor read back, where the service has settled it', async (t) => {
  const service = await listeningService(t)
  await new PlantStoreClient({ baseUrl: service, token: TOKEN }).create({ id: 9n, ...FERN })
  let first = true
  const url = await httpServer(t, async (request, response, body) => {
    // A 429 is answered before the request runs: after it, a 409 is someone else's plant.
    if (request.url === '/plants' && request.method === 'POST' && first) {
      first = false
      return answer(response, 429, RATE_LIMITED, { 'retry-after': '0' })
    }
    if (request.url === '/plants/500') return answer(response, 500, '{"error":500,"message":"Internal server error"}')
    if (request.url === '/plants/502') return answer(response, 502, '<html>Bad Gateway</html>', { 'content-type': 'text/html' })
    await relay(service, request, response, body)
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  await t.rejects(client.create({ id: 9n, ...FERN }), PlantExistsError, 'the same plant exists: after a 429, the 409 is thrown')
  t.strictSame(trace(attempts), ['POST 429', 'POST 409'], 'no read-back')

  attempts.length = 0
  await t.rejects(client.create({ id: 9n, ...FERN }), PlantExistsError, 'a 409 at the first attempt')
  t.strictSame(trace(attempts), ['POST 409'], 'not retried, no read-back')

  attempts.length = 0
  await t.rejects(client.create({ id: 10n, name: 'x', tag: 'y\u0000' }), InvalidRequestError, 'a 400')
  t.strictSame(trace(attempts), ['POST 400'], 'not retried')

  // A 500 (a bug) and a proxy's 502 are not "try again later": no request is retried on them.
  for (const id of [500n, 502n]) {
    attempts.length = 0
    const error = await client.get(id).catch((error: unknown) => error)
    t.equal((error as PlantStoreError).status, Number(id))
    t.equal(attempts.length, 1, `${id}: one attempt`)
  }
})

t.test('a delete whose 503 hid the deletion meets 404 on its retry and resolves: the plant is gone', async (t) => {
  const service = await listeningService(t)
  const direct = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  await direct.create({ id: 2n ** 63n - 1n, ...FERN })
  const { url } = await faultyProxy(t, service, 'DELETE', carriedOutThen503(service))
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  await client.delete(2n ** 63n - 1n)
  t.strictSame(trace(attempts), ['DELETE 503', 'DELETE 404'])
  t.strictSame(await direct.list(), [], 'gone')
  await t.rejects(client.delete(2n ** 63n - 1n), { status: 404, name: 'PlantNotFoundError' }, 'a 404 at the first attempt is thrown')
})
