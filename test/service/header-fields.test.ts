/**
 * No header field is silently ignored: Node keeps only the first maxHeadersCount fields
 * of a request and drops the rest unseen, so that a second Authorization or a Content-Encoding past
 * them would go unnoticed. More fields than the service reads is 431, in the Error shape, for the
 * headers and for the trailers of a chunked body. Over a real socket: inject() has no such limit.
 */
import t from 'tap'
import { DEFAULT_MAX_HEADERS_COUNT } from '../../service/config/index.js'
import { TOO_MANY_FIELDS } from '../../service/edge/http-protocol.js'
import { rawRequest } from '../helpers/server-process.js'
import { listening, settingsFrom, storedPlants, TOKEN } from '../helpers/app.js'

const VALID = `Authorization: Bearer ${TOKEN}`
const body = (id: number) => `{"id":${id},"name":"fields"}`
// Fields every request below has besides its fillers: Host, Authorization, Content-Type, and
// Connection and Content-Length, which rawRequest adds.
const OWN_FIELDS = 5

// Short fields: 2,100 of them stay under MAX_HEADER_SIZE (16 KB), as in the report (2,000 in 12 KB).
const fillers = (count: number) => Array.from({ length: count }, () => 'x:1')

t.test(`at the boundary: ${DEFAULT_MAX_HEADERS_COUNT} header fields are read, one more is 431 in the Error shape`, async (t) => {
  const { url, store } = await listening(t, {}, settingsFrom({}))
  const post = (fields: number, id: number, last: string[] = []) => rawRequest(url,
    ['POST /plants HTTP/1.1', 'Host: x', VALID, 'Content-Type: application/json', ...fillers(fields - OWN_FIELDS - last.length), ...last], body(id))
  t.equal((await post(DEFAULT_MAX_HEADERS_COUNT, 1)).status, 200, `${DEFAULT_MAX_HEADERS_COUNT} fields: stored`)
  const over = await post(DEFAULT_MAX_HEADERS_COUNT + 1, 2)
  t.equal(over.status, 431, `${DEFAULT_MAX_HEADERS_COUNT + 1} fields: 431`)
  t.same(JSON.parse(over.body), { error: 431, message: TOO_MANY_FIELDS })
  // Past Node's own limit (2,000), the fields it would drop unseen.
  const manyFields = 2100
  for (const [title, last] of [['a second Authorization', VALID], ['a Content-Encoding', 'Content-Encoding: gzip']]) {
    const answer = await post(manyFields, 3, [last])
    t.same([answer.status, JSON.parse(answer.body)], [431, { error: 431, message: TOO_MANY_FIELDS }], `${title} past Node's limit: 431, not 200`)
  }
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n], 'only the first is stored')
})

t.test('MAX_HEADERS_COUNT sets the limit, and trailers have the same one', async (t) => {
  const { url, store } = await listening(t, {}, settingsFrom({ MAX_HEADERS_COUNT: '10' }))
  const get = (fields: number) => rawRequest(url, ['GET /healthz HTTP/1.1', 'Host: x', ...fillers(fields - 3)])
  t.equal((await get(10)).status, 200, '10 fields')
  t.equal((await get(11)).status, 431, '11 fields')
  const chunked = (trailers: number, id: number) => rawRequest(url, [
    'POST /plants HTTP/1.1', 'Host: x', VALID, 'Content-Type: application/json', 'Transfer-Encoding: chunked'
  ], `${body(id).length.toString(16)}\r\n${body(id)}\r\n0\r\n${fillers(trailers).map((line) => `${line}\r\n`).join('')}\r\n`)
  t.equal((await chunked(10, 1)).status, 200, '10 trailer fields: stored')
  const over = await chunked(11, 2)
  t.equal(over.status, 431, '11 trailer fields: 431')
  t.same(JSON.parse(over.body), { error: 431, message: TOO_MANY_FIELDS })
  t.same((await storedPlants(store)).map((plant) => plant.id), [1n], 'only the first is stored')
})
