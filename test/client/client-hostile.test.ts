import t from 'tap'
import {
  DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, PlantStoreClient, ResponseTimeoutError, UnexpectedResponseError, type PlantStoreClientOptions
} from '../../client/index.js'
import { answer, httpServer, listeningService, recordedClient, timersOf } from '../helpers/client.js'
import { fakeClock } from '../helpers/fake-clock.js'
import { settlesWithin } from '../helpers/time.js'

// The client against real local servers that redirect, stall, trickle or flood.

/** Rejects after `ms` if `promise` has not settled: a client that hangs fails the test instead of stalling it. */
const within = <T>(promise: Promise<T>, ms: number) => Promise.race([
  promise,
  new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms).unref())
])

t.test('a redirect is never followed: the call rejects and says so', async (t) => {
  let elsewhere = 0
  const other = await httpServer(t, (_request, response, body) => {
    elsewhere += body.length
    answer(response, 200, '{"name":"not yours"}')
  })
  const url = await httpServer(t, (request, response) => {
    if (request.method === 'GET') return answer(response, 200, '{"name":"never created"}')
    if (request.method === 'DELETE') return answer(response, 300)
    if (request.url === '/plants') return answer(response, 302, '', { location: '/plants/1' })
    answer(response, 307, '', { location: `${other}/plants` })
  })
  const client = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false })
  const sameOrigin = await client.create({ id: 1n, name: 'Fern' }).catch((error: unknown) => error)
  t.type(sameOrigin, UnexpectedResponseError, 'a same-origin 302 does not resolve with a plant never created')
  t.match(sameOrigin, { status: 302, message: /redirect \(302 to \/plants\/1\).*does not follow/ })

  const crossing = new PlantStoreClient({ baseUrl: `${url}/elsewhere`, token: 'x', retry: false })
  await t.rejects(crossing.create({ id: 2n, name: 'Secret' }), { status: 307, message: /redirect \(307 to http/ })
  t.equal(elsewhere, 0, 'the body never reaches the other origin')
  await t.rejects(client.delete(1n), { status: 300, message: 'The answer to DELETE /plants/{id} is a redirect (300), which the client does not follow: check baseUrl' })
})

t.test('a default timeout ends slow headers and a trickling body', async (t) => {
  t.equal(DEFAULT_TIMEOUT, 30_000, 'the documented default')
  const arrived: Array<() => void> = []
  const arrival = () => new Promise<void>((resolve) => arrived.push(resolve))
  const url = await httpServer(t, (request, response) => {
    arrived.shift()?.()
    if (request.url === '/plants/1') return // headers never come
    response.writeHead(200, { 'content-type': 'application/json' })
    response.write('{"name":"')
    const trickle = setInterval(() => response.write('a'), 50)
    response.on('close', () => clearInterval(trickle))
  })
  const clock = timersOf(fakeClock())
  // Each answer's headers, as they come: what is then missing is the rest of its body.
  const headersCame: Array<() => void> = []
  const telling: typeof fetch = async (input, init) => {
    const response = await fetch(input, init)
    headersCame.shift()?.()
    return response
  }
  const client = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false, timeout: 300, fetch: telling, clock } as PlantStoreClientOptions)
  for (const id of [1n, 2n]) {
    const came = id === 1n ? arrival() : new Promise<void>((resolve) => headersCame.push(resolve))
    const failed = client.get(id).catch((error: unknown) => error)
    await came
    await clock.advance(299)
    t.ok(!await settlesWithin(failed, 20), 'still waiting 1 ms before the timeout')
    await clock.advance(1)
    const error = await within(failed, 5000)
    t.type(error, ResponseTimeoutError, id === 1n ? 'slow headers' : 'a trickling body')
    t.match(error, { message: 'No complete answer to GET /plants/{id} within 300 ms (the client\'s timeout)' })
  }
  t.strictSame(clock.delays, [300, 300], 'a deadline for each attempt')
  t.equal(clock.pending(), 0, 'none left behind')
  t.throws(() => new PlantStoreClient({ baseUrl: url, token: 'x', timeout: -1 }), RangeError)
  const untimedClock = timersOf(fakeClock())
  const untimed = new PlantStoreClient({ baseUrl: url, token: 'x', retry: { attempts: 2, baseDelay: 0 }, timeout: 0, clock: untimedClock } as PlantStoreClientOptions)
  const aborted = new AbortController()
  const came = arrival()
  const gaveUp = t.rejects(untimed.get(1n, { signal: aborted.signal }), { message: 'caller gave up' }, 'timeout 0: only the signal ends it')
  await came
  t.strictSame(untimedClock.delays, [], 'no deadline set')
  aborted.abort(new Error('caller gave up'))
  await gaveUp
})

t.test('a huge name is read without a regex stack overflow, and a body past maxResponseBytes is refused', async (t) => {
  const HUGE = 'a'.repeat(10_000_000)
  const url = await httpServer(t, (request, response) => {
    if (request.url === '/plants/1') return answer(response, 200, JSON.stringify({ name: HUGE }))
    if (request.url === '/plants/3') return answer(response, 200, '{"name":"declared"}', { 'content-length': '19' })
    response.writeHead(200, { 'content-type': 'application/json' }) // chunked, no Content-Length
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const pour = () => { while (response.write(chunk)); }
    response.on('drain', pour)
    pour()
  })
  const client = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false })
  // A service with a MAX_TEXT_LENGTH of millions: its client raises maxResponseBytes to match.
  const roomy = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false, maxResponseBytes: 16 * 1024 * 1024 })
  t.equal((await roomy.get(1n)).name.length, HUGE.length, 'a 10M-character name is a Plant')
  t.equal(DEFAULT_MAX_RESPONSE_BYTES, 8 * 1024 * 1024)
  await t.rejects(within(client.get(2n), 10_000), { message: `The answer to GET /plants/{id} is larger than ${DEFAULT_MAX_RESPONSE_BYTES} bytes (the client's maxResponseBytes)` })
  const small = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false, maxResponseBytes: 10 })
  await t.rejects(small.get(3n), { message: /larger than 10 bytes/ }, 'a Content-Length over the bound is refused before reading')
  await t.rejects(small.get(1n), UnexpectedResponseError, 'and so is a body that grows past it')
})

t.test('ids from plain JavaScript are checked at run time and path segments encoded', async (t) => {
  // Load shedding off: the run under coverage can lag past its threshold.
  const url = await listeningService(t, { pressure: { maxEventLoopDelay: 0 } })
  const { client, attempts } = recordedClient(url, { retry: false })
  const plain = client as unknown as Record<'get' | 'delete', (id: unknown) => Promise<unknown>> & { create: (plant: unknown) => Promise<unknown>, list: (query: unknown) => Promise<unknown> }
  const bad: unknown[] = [1.5, 2 ** 53 + 2, '1', '9'.repeat(2_000_000), 2n ** 63n, -(2n ** 63n) - 1n, '../healthz', null, undefined, NaN]
  for (const id of bad) {
    const label = typeof id === 'string' ? `a string of ${id.length}` : String(id)
    await t.rejects(plain.get(id), TypeError, `get(${label})`)
    await t.rejects(plain.delete(id), TypeError, `delete(${label})`)
    await t.rejects(plain.create({ id, name: 'x' }), { name: 'TypeError', message: /^plant\.id must be an int64 bigint or a safe integer/ }, `create(${label})`)
    await t.rejects(plain.list({ after: id === undefined ? 'x' : id }), TypeError, `list after ${label}`)
  }
  t.same(attempts, [], 'no request was sent for any of them')
  t.same(await plain.create({ id: 7, name: 'Safe' }), { name: 'Safe' }, 'a safe integer number is an id')
  t.same(await plain.get(7), { name: 'Safe' })
  t.same(attempts.map(({ url }) => new URL(url).pathname), ['/plants', '/plants/7'])
})
