import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { COMPRESS_THRESHOLD } from '../../service/edge/compression.js'
import { AUTH, build, JSON_TYPE } from '../helpers/app.js'

/** A GET over a real socket, its body as it crossed the wire (not decoded). */
function get (origin: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number, headers: Record<string, unknown>, body: Buffer }>((resolve, reject) => {
    httpRequest(origin + path, { headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject).end()
  })
}

t.test('a full list page and Swagger UI\'s bundle are compressed when asked, small answers never', async (t) => {
  const { app, store } = await build(t)
  for (let id = 1n; id <= 1000n; id++) await store.create({ id, name: 'n'.repeat(1000) })
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const gzip = { 'accept-encoding': 'gzip, deflate, br' }

  const plain = await get(origin, '/plants?limit=1000', AUTH)
  const packed = await get(origin, '/plants?limit=1000', { ...AUTH, ...gzip })
  t.notOk(plain.headers['content-encoding'], 'without Accept-Encoding, as it is')
  t.ok(plain.body.length > 1_000_000, `a full page: ${plain.body.length} bytes`)
  t.ok(packed.headers['content-encoding'], `compressed with ${packed.headers['content-encoding']}`)
  t.ok(packed.body.length < plain.body.length / 10, `${plain.body.length} -> ${packed.body.length} bytes`)

  const bundle = '/documentation/static/swagger-ui-bundle.js'
  const raw = await get(origin, bundle)
  // Measured as CPU time of this process (server and client), which the machine's other work does not add to.
  const timings: number[] = []
  let zipped
  for (let run = 0; run < 3; run++) {
    const started = process.cpuUsage()
    zipped = await get(origin, bundle, gzip)
    const { user, system } = process.cpuUsage(started)
    timings.push((user + system) / 1000)
  }
  t.equal(zipped!.headers['content-encoding'], 'gzip')
  t.match(zipped!.headers, { vary: /accept-encoding/i, 'content-type': /javascript/, 'content-security-policy': /default-src 'self'/ })
  t.same(gunzipSync(zipped!.body), raw.body, 'the same file')
  t.ok(zipped!.body.length < raw.body.length / 2, `bundle ${raw.body.length} -> ${zipped!.body.length} bytes`)
  t.ok(timings[2] < timings[0], `gzipped once, then served from memory: ${timings.map((ms) => ms.toFixed(1)).join(', ')} ms of CPU`)
  const small = await get(origin, '/documentation/static/index.css', gzip)
  t.notOk(small.headers['content-encoding'], 'a small file goes as it is')
  const refused = await get(origin, bundle, { 'accept-encoding': 'gzip;q=0' })
  t.notOk(refused.headers['content-encoding'], 'gzip;q=0 is a refusal')
  t.equal((await get(origin, '/documentation/static/nope.js', gzip)).status, 404)

  const created = await fetch(`${origin}/plants`, {
    method: 'POST', headers: { ...AUTH, ...JSON_TYPE, ...gzip }, body: JSON.stringify({ id: 5000, name: 'x'.repeat(COMPRESS_THRESHOLD) })
  })
  t.equal(created.status, 400, 'too long a name')
  t.notOk(created.headers.get('content-encoding'), 'POST /plants answers are never compressed')
  const encoded = await fetch(`${origin}/plants`, {
    method: 'POST', headers: { ...AUTH, ...JSON_TYPE, 'content-encoding': 'gzip' }, body: '{}'
  })
  t.equal(encoded.status, 415, 'a compressed request body is still refused')
})
