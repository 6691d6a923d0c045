import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { ConfigError, corsOrigins, loadConfig } from '../../../service/config/index.js'
import { build, TOKEN } from '../../helpers/app.js'
import { BROWSER_TIMEOUT, launchChromium, skipWithoutChromium } from '../../helpers/chromium.js'

// A page on its own origin (another local server) whose script creates a plant through the API
// named in its query string, as a browser app on another origin would.
const PAGE = `<!doctype html><title>garden</title><script>
  window.created = fetch(new URLSearchParams(location.search).get('api') + '/plants', {
    method: 'POST',
    headers: { authorization: 'Bearer ${TOKEN}', 'content-type': 'application/json' },
    body: '{"id": 9007199254740993, "name": "Cross fern"}'
  }).then(async (response) => response.status + ' ' + await response.text(), (error) => 'failed: ' + error.message)
</script>`

t.test('CORS_ORIGINS is a list of origins, none by default', async (t) => {
  t.same(corsOrigins(loadConfig({})), [])
  t.same(corsOrigins(loadConfig({ CORS_ORIGINS: ' https://app.example , http://127.0.0.1:8080' })), ['https://app.example', 'http://127.0.0.1:8080'])
  t.throws(() => loadConfig({ CORS_ORIGINS: 'https://app.example/path' }), ConfigError)
  t.throws(() => loadConfig({ CORS_ORIGINS: '*' }), ConfigError)
})

t.test('a page on another origin calls the API in Chromium when its origin is listed, and only then', {
  skip: skipWithoutChromium(t),
  timeout: 3 * BROWSER_TIMEOUT
}, async (t) => {
  const pages = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE))
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => pages.close(() => resolve())))
  const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`
  const context = await launchChromium(t)
  const page = context.pages()[0] ?? await context.newPage()
  const preflight = (api: string, from: string) => fetch(`${api}/plants`, {
    method: 'OPTIONS',
    headers: { origin: from, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
  })

  // By default (no CORS_ORIGINS): the browser refuses the call, nothing is stored.
  const closed = await build(t)
  const closedApi = await closed.app.listen({ host: '127.0.0.1', port: 0 })
  await page.goto(`${origin}/?api=${encodeURIComponent(closedApi)}`, { waitUntil: 'load' })
  t.match(await page.evaluate('window.created'), /^failed: /, 'by default the browser refuses the call')
  t.same(await closed.store.list({ limit: 10 }), [], 'and nothing is stored')
  t.equal((await preflight(closedApi, origin)).headers.get('access-control-allow-origin'), null, 'no Access-Control-* by default')

  // Listed: the preflight is answered and the page creates its plant.
  const open = await build(t, {}, { corsOrigins: ['https://other.example', origin] })
  const openApi = await open.app.listen({ host: '127.0.0.1', port: 0 })
  await page.goto(`${origin}/?api=${encodeURIComponent(openApi)}`, { waitUntil: 'load' })
  t.equal(await page.evaluate('window.created'), '200 {"name":"Cross fern"}', 'a listed origin creates the plant')
  t.same(await open.store.get(9007199254740993n), { name: 'Cross fern' }, 'stored under the exact id')
  const answered = await preflight(openApi, origin)
  t.equal(answered.status, 204, 'the preflight is answered, without a token')
  t.match(Object.fromEntries(answered.headers), {
    'access-control-allow-origin': origin,
    'access-control-allow-methods': /POST/,
    'access-control-allow-headers': /authorization/,
    'access-control-max-age': '600'
  })
  t.equal((await preflight(openApi, 'http://evil.example')).headers.get('access-control-allow-origin'), null,
    'an origin not listed gets no Access-Control-Allow-Origin')
})
