/**
 * Swagger UI's files served gzipped are as cacheable as the plain ones: an ETag of their own,
 * `Vary: Accept-Encoding`, the same Cache-Control, and 304 when revalidated. The OpenAPI document
 * is gzipped once, not on every request.
 */
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { build } from '../helpers/app.js'

const BUNDLE = '/documentation/static/swagger-ui-bundle.js'
const GZIP = { 'accept-encoding': 'gzip' }

t.test('a gzipped Swagger UI file has its own ETag, Vary and a public Cache-Control, and is revalidated with 304', async (t) => {
  const { app } = await build(t)
  const plain = await app.inject({ url: BUNDLE })
  const zipped = await app.inject({ url: BUNDLE, headers: GZIP })
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.same(gunzipSync(zipped.rawPayload), plain.rawPayload, 'the same file')
  t.equal(zipped.headers['cache-control'], plain.headers['cache-control'], `the plain file's Cache-Control: ${plain.headers['cache-control']}`)
  t.match(zipped.headers['cache-control'], /public/)
  t.match(zipped.headers.vary, /accept-encoding/i, 'the gzipped file varies by Accept-Encoding')
  t.match(plain.headers.vary, /accept-encoding/i, 'and so does the plain one')
  const etag = zipped.headers.etag as string
  t.match(etag, /^"[^"]+"$/, `an ETag: ${etag}`)
  t.not(etag.replace(/^W\//, ''), (plain.headers.etag as string).replace(/^W\//, ''), 'not the plain file\'s')

  for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const revalidated = await app.inject({ url: BUNDLE, headers: { ...GZIP, 'if-none-match': ifNoneMatch } })
    t.equal(revalidated.statusCode, 304, `If-None-Match: ${ifNoneMatch} is 304`)
    t.equal(revalidated.rawPayload.length, 0, 'without a body')
    t.equal(revalidated.headers.etag, etag)
  }
  const changed = await app.inject({ url: BUNDLE, headers: { ...GZIP, 'if-none-match': '"other"' } })
  t.equal(changed.statusCode, 200, 'another ETag gets the file')
  t.equal(changed.headers['content-encoding'], 'gzip')
})

t.test('the OpenAPI document is gzipped once, then served from memory', async (t) => {
  const { app } = await build(t)
  const plain = await app.inject({ url: '/documentation/json' })
  const first = await app.inject({ url: '/documentation/json', headers: GZIP })
  t.equal(first.headers['content-encoding'], 'gzip')
  t.same(JSON.parse(gunzipSync(first.rawPayload).toString()), plain.json(), 'the same document')
  t.match(first.headers.vary, /accept-encoding/i)

  // Measured as CPU time of this process, which the machine's other work does not add to.
  const cpu = async (headers: Record<string, string>) => {
    const start = process.cpuUsage()
    for (let run = 0; run < 200; run++) await app.inject({ url: '/documentation/json', headers })
    const { user, system } = process.cpuUsage(start)
    return (user + system) / 200 / 1000
  }
  const plainCost = await cpu({})
  const zippedCost = await cpu(GZIP)
  t.comment(`CPU per request: plain ${plainCost.toFixed(2)} ms, gzipped ${zippedCost.toFixed(2)} ms`)
  t.ok(zippedCost < 2 * plainCost, 'a gzipped answer costs less than twice a plain one: it is not compressed again')
})
