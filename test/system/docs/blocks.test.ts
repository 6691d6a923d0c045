import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { plantCreatedPayload, plantDeletedPayload, plantUpdatedPayload } from '../../../plugins/webhooks/delivery/payload.js'
import { SCHEMA_VERSION } from '../../../plugins/store/postgres/schema-version.js'
import { newerSchema } from '../../../plugins/store/schema-version.js'
import { SQLITE_SCHEMA_VERSION } from '../../../plugins/store/sqlite/schema-version.js'
import { loadConfig, readWebhooks } from '../../../service/config/index.js'
import { codeBlocks, PAGES } from '../../helpers/docs-pages.js'

// Every code block of README.md and docs/ is of a kind a test checks: shell (commands.test.ts,
// curl-sessions.test.ts), TypeScript (file-blocks, typescript, test/client/client-docs), the
// schema-sql output (test/system/processes/schema-sql.test.ts), the Layout (layout.test.ts), and
// the kinds below, checked here. A block of another kind needs a check before it is added.

const blocks = PAGES.flatMap(codeBlocks)
const ofKind = (lang: string) => blocks.filter((block) => block.lang === lang)
const CHECKED_ELSEWHERE = new Set(['sh', 'ts', 'sql', ''])

t.test('every code block is of a kind a test checks', async (t) => {
  for (const { page, line, lang } of blocks) {
    t.ok(CHECKED_ELSEWHERE.has(lang) || ['json', 'text', 'nginx'].includes(lang), `${page}:${line}: a ${lang || 'plain'} block is checked`)
  }
  t.same(ofKind('sql').map(({ page }) => page), ['docs/operations.md'], 'the one SQL block is what schema-sql prints')
  t.same(ofKind('').map(({ page }) => page), ['docs/development.md'], 'the one plain block is the Layout')
})

t.test('a webhook body shown is the text the service sends for that plant, byte for byte', async (t) => {
  const bodies = ofKind('json').flatMap(({ code }) => code.split('\n')).filter((line) => line.startsWith('{"type":'))
  t.ok(bodies.length >= 4, `${bodies.length} bodies`)
  for (const body of bodies) {
    const { type, timestamp, name, tag } = JSON.parse(body)
    const id = BigInt(/"id":(-?\d+)/.exec(body)![1])
    const plant = { id, name, ...(tag !== undefined && { tag }) }
    const sent = type === 'plant.created'
      ? plantCreatedPayload(plant, new Date(timestamp))
      : type === 'plant.updated' ? plantUpdatedPayload(plant, new Date(timestamp)) : plantDeletedPayload(id, new Date(timestamp))
    t.equal(body, sent, `${type} as sent`)
  }
})

t.test('the endpoints file shown is one the service accepts', async (t) => {
  const [file] = ofKind('json').filter(({ code }) => code.startsWith('['))
  const path = join(t.testdir({}), 'endpoints.json')
  writeFileSync(path, file.code)
  const webhooks = readWebhooks(loadConfig({ DATABASE_URL: 'memory:', WEBHOOK_ENDPOINTS_FILE: path }))
  t.same(webhooks?.endpoints.map(({ name }) => name), JSON.parse(file.code).map(({ name }: { name: string }) => name))
})

t.test('a log shown is JSON lines of a level and a message', async (t) => {
  const logs = ofKind('json').filter(({ code }) => code.startsWith('{"level"'))
  t.ok(logs.length >= 2, 'the start-up hints and the store-fault lines')
  for (const { page, line, code } of logs) {
    for (const entry of code.trim().split('\n').map((text) => JSON.parse(text))) {
      t.match(entry, { level: Number, msg: String }, `${page}:${line}`)
    }
  }
})

t.test('the refusals of data a newer release wrote say what the store says', async (t) => {
  const [refusals] = ofKind('text')
  const lines = refusals.code.trim().split('\n')
  t.equal(lines.length, 2, 'SQLite and PostgreSQL')
  // Each for a version one past what this release knows of that store.
  for (const [line, known] of [[lines[0]!, SQLITE_SCHEMA_VERSION], [lines[1]!, SCHEMA_VERSION]] as const) {
    t.match(line, /^Invalid configuration: DATABASE_URL cannot be opened \(/)
    t.ok(line.includes(newerSchema(known + 1, known)), 'the store\'s own words, at the versions this release knows')
  }
})

t.test('the proxy shown passes what TRUST_PROXY reads to the address the service listens on', async (t) => {
  const [nginx] = ofKind('nginx')
  t.match(nginx.code, 'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;')
  t.match(nginx.code, 'proxy_pass http://127.0.0.1:3000;')
  t.match(blocks.find(({ code }) => code.includes('TRUST_PROXY=127.0.0.1'))!.code, 'HOST=127.0.0.1 PORT=3000')
})
