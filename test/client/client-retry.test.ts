import { createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { realClock } from '../../client/clock.js'
import {
  etagOf, InvalidRequestError, PlantExistsError, PlantStoreClient, PlantStoreError, PreconditionFailedError, RateLimitedError,
  ServiceUnavailableError, stringifyExactJson, type NewPlant
} from '../../client/index.js'
import { TOKEN } from '../helpers/app.js'
import {
  answer, faultyProxy, forward, httpServer, listeningService, recordedClient, relay, timersOf, trace, type Handler
} from '../helpers/client.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { settlesWithin } from '../helpers/time.js'

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

/** A fake clock for the client (test/helpers/fake-clock.ts), telling of each timer it sets. */
const clientClock = () => timersOf(fakeClock())

t.test('503 and 429 are retried after the wait Retry-After asks for, in seconds or as an HTTP date', async (t) => {
  const clock = clientClock()
  // A quarter second past a whole one: an HTTP date, to the second, is then not a whole number of seconds away.
  clock.set(clock.now() + 250)
  let requests = 0
  let dateSent = 0
  const url = await httpServer(t, (_request, response) => {
    requests++
    if (requests === 1) return answer(response, 503, UNAVAILABLE, { 'retry-after': '1' })
    if (requests === 2) {
      // Two seconds ahead, to the second an HTTP date carries.
      dateSent = Math.floor(clock.now() / 1000) * 1000 + 2000
      return answer(response, 429, RATE_LIMITED, { 'retry-after': new Date(dateSent).toUTCString() })
    }
    answer(response, 200, JSON.stringify(FERN))
  })
  const { client, attempts } = recordedClient(url, { clock, timeout: 0 })
  const got = client.get(1n)
  t.equal(await clock.nextTimer(), 1000, 'the wait "Retry-After: 1" asks for')
  t.equal(attempts.length, 1, 'no retry before it is over')
  await clock.advance(1000)
  const second = await clock.nextTimer()
  t.equal(second, 1750, 'until the date')
  t.equal(clock.now() + second, dateSent, 'to the ms')
  await clock.advance(second)
  t.strictSame(await got, FERN, 'the third attempt is answered')
  t.strictSame(attempts.map(({ status }) => status), [503, 429, 200])
  t.strictSame(clock.delays, [1000, 1750], 'no other wait')
})

t.test('without Retry-After the waits are a jittered exponential backoff, and the attempts are bounded', async (t) => {
  const url = await httpServer(t, (_request, response) => answer(response, 503, UNAVAILABLE))
  const clock = clientClock()
  const { client, attempts } = recordedClient(url, { clock, timeout: 0, retry: { attempts: 5, baseDelay: 40, maxDelay: 100 } })
  const failed = client.list().catch((error: unknown) => error)
  const bounds = [[20, 40], [40, 80], [50, 100], [50, 100]] // half to all of 40, 80, then the 100 ms cap
  for (const [index, [low, high]] of bounds.entries()) {
    const wait = await clock.nextTimer()
    t.ok(wait >= low && wait <= high, `retry ${index + 1}: ${wait.toFixed(1)} ms, from ${low} to ${high}`)
    await clock.advance(wait)
  }
  const error = await failed
  t.type(error, ServiceUnavailableError, 'the last answer is thrown as a typed error')
  t.match(error, { status: 503, body: JSON.parse(UNAVAILABLE), retryAfter: undefined })
  t.equal(attempts.length, 5, 'five attempts in all')
  t.equal(clock.delays.length, 4, 'a wait before each retry, none after the last attempt')
})

t.test('no retry starts past maxElapsed: a long Retry-After ends the call at once with the error', async (t) => {
  const url = await httpServer(t, (_request, response) => answer(response, 429, RATE_LIMITED, { 'retry-after': '5' }))
  const clock = clientClock()
  const { client, attempts } = recordedClient(url, { clock, timeout: 0, retry: { maxElapsed: 2000 } })
  const error = await client.get(1n).catch((error: unknown) => error)
  t.type(error, RateLimitedError)
  t.match(error, { status: 429, body: JSON.parse(RATE_LIMITED), retryAfter: 5000 }, 'it says how long to wait')
  t.equal(attempts.length, 1, 'one attempt')
  t.strictSame(clock.delays, [], 'no wait')
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
  let inFlight: () => void
  const secondArrived = new Promise<void>((resolve) => { inFlight = resolve })
  const url = await httpServer(t, (request, response) => {
    if (request.url === '/plants/1') answer(response, 503, UNAVAILABLE, { 'retry-after': '10' })
    if (request.url === '/plants/2') inFlight() // never answered
    if (request.url === '/plants/3') {
      if (thirdAnswered) answer(response, 200, JSON.stringify(FERN))
      else answer(response, 503, UNAVAILABLE, { 'retry-after': '0' })
      thirdAnswered = true
    }
  })
  const clock = clientClock()
  const { client, attempts } = recordedClient(url, { clock, timeout: 0 })
  const aborted = (path: bigint) => {
    const reason = new Error(`stop ${path}`)
    const controller = new AbortController()
    const call = client.get(path, { signal: controller.signal }).catch((error: unknown) => error)
    return { reason, call, abort: () => controller.abort(reason) }
  }
  const waiting = aborted(1n)
  t.equal(await clock.nextTimer(), 10_000, 'GET /plants/1 waits to retry')
  waiting.abort()
  t.ok(await settlesWithin(waiting.call, 5000), 'and ends at the abort, the clock not moved')
  t.equal(await waiting.call, waiting.reason, "GET /plants/1 rejects with the signal's reason")
  t.equal(clock.pending(), 0, 'its wait given up')

  const flying = aborted(2n)
  await secondArrived
  flying.abort()
  t.ok(await settlesWithin(flying.call, 5000), 'GET /plants/2 ends at the abort, unanswered')
  t.equal(await flying.call, flying.reason, "GET /plants/2 rejects with the signal's reason")
  t.equal(attempts.length, 2, 'one request each')

  await t.rejects(client.get(1n, { signal: AbortSignal.abort() }), { name: 'AbortError' }, 'an aborted signal sends nothing')
  t.equal(attempts.length, 2)
  const answered = client.get(3n, { signal: new AbortController().signal })
  await clock.advance(await clock.nextTimer())
  t.strictSame(await answered, FERN, 'a signal not aborted changes nothing')
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
  // The real clock: the service's window is real time too.
  const clock = timersOf(realClock)
  const { client, attempts } = recordedClient(url, { clock, timeout: 0 })
  // A create refused by the rate limit never ran: it is retried like any other request.
  t.strictSame(await client.create({ id: 1n, ...FERN }), FERN)
  t.strictSame(await client.get(1n), FERN)
  t.strictSame(await client.create({ id: 2n, name: 'Agave' }), { name: 'Agave' }, 'the third request waits for the next window')
  t.strictSame(trace(attempts), ['POST 200', 'GET 200', 'POST 429', 'POST 200'])
  t.strictSame(clock.delays, [1000], 'it waited as "Retry-After: 1" asks')

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

t.test('an update under ifMatch whose 503 hid the write meets 412 on its retry, reads the plant back and resolves', async (t) => {
  const service = await listeningService(t)
  const { url } = await faultyProxy(t, service, 'PUT', carriedOutThen503(service))
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  const created = await client.create({ id: 2n ** 53n + 1n, name: 'Fern' })
  attempts.length = 0
  const updated = await client.update(2n ** 53n + 1n, FERN, { ifMatch: etagOf(created)! })
  t.strictSame(updated, FERN, 'resolves with the stored plant')
  t.strictSame(trace(attempts), ['PUT 503', 'PUT 412', 'GET 200'])
  t.not(etagOf(updated), etagOf(created), 'at its new ETag')
})

t.test('an update under ifMatch retried after 503 that meets another change throws the 412', async (t) => {
  const service = await listeningService(t)
  const other = new PlantStoreClient({ baseUrl: service, token: TOKEN })
  // The client's first PUT is not carried out; meanwhile someone else updates the plant.
  const { url } = await faultyProxy(t, service, 'PUT', async (_request, response) => {
    await other.update(8n, { name: 'Cactus' })
    answer(response, 503, UNAVAILABLE)
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  const created = await client.create({ id: 8n, name: 'Fern' })
  attempts.length = 0
  const error = await client.update(8n, FERN, { ifMatch: etagOf(created)! }).catch((error: unknown) => error)
  t.type(error, PreconditionFailedError)
  t.match(error, { status: 412, body: { error: 412 } })
  t.strictSame(trace(attempts), ['PUT 503', 'PUT 412', 'GET 200'])
  t.strictSame(await other.get(8n), { name: 'Cactus' }, 'the other change stays')
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
