/**
 * One request, one credential, in one place: the Authorization header, once (RFC 6750 §2: "Clients
 * MUST NOT use more than one method to transmit the token in each request"). Credentials sent
 * twice, in the trailers of a chunked body, or by RFC 6750's other methods (the query string, a
 * form body) are refused with 401 and store nothing. Sent over a real socket: fetch and
 * http.request would merge repeated headers and cannot write trailers by hand.
 */
import t, { type Test } from 'tap'
import { rawRequest, type RawResponse } from '../helpers/server-process.js'
import { listening, storedPlants, TOKEN } from '../helpers/app.js'

const CHALLENGE = 'Bearer realm="plant-store"'
const VALID = `Authorization: Bearer ${TOKEN}`
const body = '{"id":1,"name":"once"}'

function assertRefused (t: Test, response: RawResponse, title: string) {
  t.equal(response.status, 401, `${title}: 401`)
  t.same(JSON.parse(response.body), { error: 401, message: 'A valid bearer token is required' }, `${title}: Error-shaped`)
  t.same(response.headers['www-authenticate'], [CHALLENGE], `${title}: one challenge`)
}

t.test('a second Authorization header is refused wherever it appears, whatever its case', async (t) => {
  const { url, store } = await listening(t)
  const post = (...headers: string[]) => rawRequest(url, ['POST /plants HTTP/1.1', 'Host: x', ...headers, 'Content-Type: application/json'], body)
  const cases: Record<string, string[]> = {
    'twice, side by side': [VALID, VALID],
    'twice, apart': [VALID, 'Accept: application/json', 'X-Request-Id: 7', VALID],
    'in two cases': [VALID, `AUTHORIZATION: Bearer ${TOKEN}`],
    'a valid one, then an empty one': [VALID, 'Authorization:'],
    'an empty one, then a valid one': ['authorization: ', VALID],
    'a valid one, then another scheme': [VALID, 'Authorization: Basic dXNlcjpwYXNz']
  }
  for (const [title, headers] of Object.entries(cases)) assertRefused(t, await post(...headers), title)
  t.same(await storedPlants(store), [], 'nothing stored')
  t.equal((await post(VALID)).status, 200, 'the same request with the header once is accepted')
})

t.test('an Authorization field in the trailers of a chunked body is refused, and nothing is stored', async (t) => {
  const { url, store } = await listening(t)
  const chunked = (trailers: string[]) => rawRequest(url, [
    'POST /plants HTTP/1.1', 'Host: x', VALID, 'Content-Type: application/json', 'Transfer-Encoding: chunked', 'Trailer: Authorization'
  ], `${body.length.toString(16)}\r\n${body}\r\n0\r\n${trailers.map((line) => `${line}\r\n`).join('')}\r\n`)
  for (const trailer of [VALID, 'Authorization: Bearer another', 'authorization: ']) {
    assertRefused(t, await chunked([trailer]), `trailer ${trailer}`)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
  t.equal((await chunked(['X-Checksum: 1'])).status, 200, 'other trailers are fine')
})

t.test('a token in the query string is refused, with or without a valid header; nothing is stored', async (t) => {
  const { url, store } = await listening(t)
  for (const [title, headers] of [['alone', []], ['beside a valid header', [VALID]]] as const) {
    const post = await rawRequest(url, [`POST /plants?access_token=${TOKEN} HTTP/1.1`, 'Host: x', ...headers, 'Content-Type: application/json'], body)
    assertRefused(t, post, `POST, ${title}`)
    const get = await rawRequest(url, [`GET /plants?limit=5&access_token=${TOKEN} HTTP/1.1`, 'Host: x', ...headers])
    assertRefused(t, get, `GET, ${title}`)
  }
  t.same(await storedPlants(store), [], 'nothing stored')
})

t.test('a token in a form body is not a credential: 401 without a header, 415 with one; nothing is stored', async (t) => {
  const { url, store } = await listening(t)
  const form = (...headers: string[]) => rawRequest(url,
    ['POST /plants HTTP/1.1', 'Host: x', ...headers, 'Content-Type: application/x-www-form-urlencoded'], `access_token=${TOKEN}&id=1&name=form`)
  assertRefused(t, await form(), 'without a header')
  const withHeader = await form(VALID)
  t.equal(withHeader.status, 415, 'with a valid header: 415, the body is not JSON')
  t.same(await storedPlants(store), [], 'nothing stored')
})
