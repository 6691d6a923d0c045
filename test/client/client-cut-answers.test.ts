import type { ServerResponse } from 'node:http'
import t from 'tap'
import { PlantStoreClient, ResponseTimeoutError, UnexpectedResponseError } from '../../client/index.js'
import { MAX_INTEGER_LENGTH, parseExactJson } from '../../schemas/exact-json.js'
import { answer, faultyProxy, forward, httpServer, listeningService, recordedClient, trace } from '../helpers/client.js'

const FERN = { name: 'Fern', tag: 'green' }
const LIST = JSON.stringify([{ id: 1, ...FERN }])

/** Headers and the start of the body, then nothing more: the connection stays open. */
const stallAfterHeaders = (response: ServerResponse, body: string) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) })
  response.write(body.slice(0, 5))
}

/** Headers and the start of the body, then a TCP reset. */
const resetMidBody = (response: ServerResponse, body: string) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) })
  response.write(body.slice(0, 5), () => response.socket!.resetAndDestroy())
}

t.test('an answer that stalls after its headers, or is reset mid-body, is retried by a read', async (t) => {
  let requests = 0
  const url = await httpServer(t, (request, response) => {
    const body = request.url === '/plants/1' ? JSON.stringify(FERN) : LIST
    requests++
    if (requests === 1) return stallAfterHeaders(response, body)
    if (requests === 3) return resetMidBody(response, body)
    answer(response, 200, body)
  })
  const { client, attempts } = recordedClient(url, { timeout: 1000, retry: { baseDelay: 10 } })
  t.strictSame(await client.get(1n), FERN, 'a stalled body: answered by the second attempt')
  t.strictSame(await client.list(), [{ id: 1n, ...FERN }], 'a reset body: answered by the second attempt')
  // The stalled attempt's status is recorded only if its headers reached the client before the
  // timeout, which a loaded machine may delay: what counts is that each call was sent twice.
  const statuses = trace(attempts)
  t.equal(statuses.length, 4, 'each call sent twice')
  t.strictSame(statuses.slice(2), ['GET 200', 'GET 200'], 'the reset attempt had its headers; the retry its answer')
  t.equal(statuses[1], 'GET 200')
})

t.test('when every attempt is cut, the last failure is thrown; without retries, the first', async (t) => {
  const url = await httpServer(t, (request, response) => {
    if (request.url === '/plants/1') stallAfterHeaders(response, JSON.stringify(FERN))
    else resetMidBody(response, LIST)
  })
  const { client, attempts } = recordedClient(url, { timeout: 300, retry: { attempts: 2, baseDelay: 10 } })
  await t.rejects(client.get(1n), ResponseTimeoutError, 'stalled every time')
  await t.rejects(client.list(), { name: 'TypeError', message: 'terminated' }, 'reset every time: fetch\'s own error')
  t.equal(attempts.length, 4, 'two attempts each')
  const once = recordedClient(url, { timeout: 300, retry: false })
  await t.rejects(once.client.get(1n), ResponseTimeoutError)
  t.equal(once.attempts.length, 1)
})

t.test('a create whose 200 is reset mid-body after the commit meets 409 on its retry, reads back and resolves', async (t) => {
  const service = await listeningService(t)
  const { url } = await faultyProxy(t, service, 'POST', async (request, response, body) => {
    const { text } = await forward(service, request, body)
    resetMidBody(response, text)
  })
  const { client, attempts } = recordedClient(url, { retry: { baseDelay: 10 } })
  t.strictSame(await client.create({ id: 2n ** 63n - 1n, ...FERN }), FERN)
  t.strictSame(trace(attempts), ['POST 200', 'POST 409', 'GET 200'])
  t.strictSame(await client.list(), [{ id: 2n ** 63n - 1n, ...FERN }], 'stored once')
})

t.test('a body past maxResponseBytes is final: not tried again', async (t) => {
  const url = await httpServer(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }) // chunked: the size shows as it is read
    response.end(JSON.stringify({ name: 'a name longer than ten bytes' }))
  })
  const { client, attempts } = recordedClient(url, { maxResponseBytes: 10, retry: { baseDelay: 10 } })
  await t.rejects(client.get(1n), UnexpectedResponseError)
  t.equal(attempts.length, 1)
})

t.test('an integer longer than any int64 is refused at once, not read for seconds', async (t) => {
  t.equal(MAX_INTEGER_LENGTH, '-9223372036854775808'.length)
  t.equal(parseExactJson('-9223372036854775808'), -(2n ** 63n))
  t.equal(parseExactJson('18446744073709551616'), 2n ** 64n, '20 characters, past int64: read, for the caller to judge')
  t.throws(() => parseExactJson('[1, 100000000000000000000]'),
    { name: 'RangeError', message: 'Integer of 21 characters in JSON at position 4: longer than any int64 (20)' })
  t.equal(parseExactJson(`1.${'0'.repeat(100)}`), 1, 'a fraction is a number, as JSON.parse reads it')

  const HUGE = `[{"id":${'9'.repeat(8_000_000)},"name":"n"}]`
  const url = await httpServer(t, (_request, response) => answer(response, 200, HUGE))
  const client = new PlantStoreClient({ baseUrl: url, token: 'x', retry: false })
  await t.rejects(client.list(), { name: 'UnexpectedResponseError', message: /^The answer to GET \/plants is not a list of plants/ })
  // What the client parsed it with: refused by its length, never made a BigInt (seconds for 8 million digits).
  t.throws(() => parseExactJson(HUGE), { name: 'RangeError', message: 'Integer of 8000000 characters in JSON at position 7: longer than any int64 (20)' },
    'refused by its length')
})
