import t from 'tap'
import { API_HEADERS, helmetHeaders } from '../../service/edge/security-headers.js'
import { AUTH, build, createPlant } from '../helpers/app.js'

// helmet's headers that only mean something for an HTML page, or over HTTPS.
const HTML_ONLY = [
  'strict-transport-security', 'cross-origin-opener-policy', 'cross-origin-resource-policy', 'origin-agent-cluster',
  'referrer-policy', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection'
]

t.test('JSON answers carry the REST API header set, and none of the HTML page headers', async (t) => {
  const { app } = await build(t)
  const answers = {
    'a created plant': await createPlant(app, { id: 1, name: 'n' }),
    'a bad body': await createPlant(app, { id: 'x', name: 'n' }),
    'no token': await app.inject({ method: 'POST', url: '/plants', payload: {} }),
    'an unknown route': await app.inject({ url: '/nope' }),
    'an unknown documentation page': await app.inject({ url: '/documentation/nope' }),
    'the health probe': await app.inject({ url: '/healthz' }),
    'the metrics': await app.inject({ url: '/metrics' })
  }
  for (const [label, response] of Object.entries(answers)) {
    t.match(response.headers, {
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY'
    }, label)
    for (const name of [...HTML_ONLY, 'x-powered-by', 'server']) t.notOk(response.headers[name], `${label}: no ${name}`)
  }
  t.same(Object.keys(API_HEADERS).sort(), ['cache-control', 'content-security-policy', 'x-content-type-options', 'x-frame-options'])
})

t.test('the documentation pages keep helmet\'s full set, whose CSP Swagger UI works under', async (t) => {
  const { app } = await build(t)
  const helmet = helmetHeaders()
  t.ok(helmet['strict-transport-security'] && helmet['content-security-policy'].includes("default-src 'self'"), 'helmet\'s defaults')
  for (const url of ['/documentation', '/documentation/', '/documentation/json', '/documentation/static/swagger-ui.css']) {
    const response = await app.inject({ url, headers: AUTH })
    t.equal(response.statusCode, 200, url)
    t.match(response.headers, helmet, url)
    t.notOk(response.headers['x-powered-by'], `${url}: no x-powered-by`)
  }
})
