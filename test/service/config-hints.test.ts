import t from 'tap'
import { configHints } from '../../service/config/hints.js'
import { startServer } from '../helpers/server-process.js'

t.test('a misspelled setting and an unknown NODE_ENV each log one warning naming what was meant', async (t) => {
  const server = await startServer(t, { API_TOKEN: 'a-token-meant-for-API_TOKENS', NODE_ENV: 'prod' })
  const warnings = server.logs().filter((line) => line.level === 40).map((line) => line.msg)
  t.same(warnings, [
    'API_TOKEN is not a setting and is ignored: did you mean API_TOKENS?',
    'NODE_ENV=prod is none of production, development, test and counts as not production: did you mean NODE_ENV=production?'
  ])
})

t.test('no hint for the system\'s own variables, known names, or a typo already overridden', async (t) => {
  t.same(configHints({ HOME: '/root', PATH: '/bin', PWD: '/', HOSTNAME: 'box', PORT: '1', NODE_ENV: 'production' }), [])
  t.same(configHints({ DATABASE_URI: 'memory:' }), ['DATABASE_URI is not a setting and is ignored: did you mean DATABASE_URL?'])
  t.same(configHints({ DATABASE_URI: 'memory:', DATABASE_URL: 'memory:' }), [], 'the real one is set: the other is something else')
  t.same(configHints({ METRICS_POST: '9000' }), [], 'as close to METRICS_HOST as to METRICS_PORT: no guess')
  t.same(configHints({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: 'grpc', OTEL_METRICS_EXPORTER: 'otlp' }), [],
    'OpenTelemetry\'s settings for other signals')
  t.same(configHints({ OTEL_SERVICE_NAM: 'x' }), ['OTEL_SERVICE_NAM is not a setting and is ignored: did you mean OTEL_SERVICE_NAME?'])
  t.same(configHints({ NODE_ENV: 'staging' }), ['NODE_ENV=staging is none of production, development, test and counts as not production'])
  t.same(configHints({ PORTS: '80', NODE_ENV: 'Dev' }), [
    'PORTS is not a setting and is ignored: did you mean PORT?',
    'NODE_ENV=Dev is none of production, development, test and counts as not production: did you mean NODE_ENV=development?'
  ])
})
