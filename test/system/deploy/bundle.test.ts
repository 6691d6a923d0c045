import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { TOKEN } from '../../helpers/app.js'
import { startServer } from '../../helpers/server-process.js'
import { slowReceiver } from '../../helpers/webhook-crash.js'
import { eventually } from '../../helpers/webhooks.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

t.test('the bundled server answers plants on SQLite, delivers their events from its thread, and serves every documentation page', async (t) => {
  // Inside the project, so that the bundle finds its external packages in node_modules.
  mkdirSync(join(ROOT, '.tap'), { recursive: true })
  const outdir = mkdtempSync(join(ROOT, '.tap', 'bundle-'))
  const data = mkdtempSync(join(tmpdir(), 'plant-store-bundle-'))
  t.teardown(() => {
    rmSync(outdir, { recursive: true, force: true })
    rmSync(data, { recursive: true, force: true })
  })
  execFileSync(process.execPath, ['scripts/bundle.mjs', '--entry', 'service/entry-points/server.ts', '--outdir', outdir], { cwd: ROOT })
  const receiver = await slowReceiver(t, 0)
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(data, 'plants.db')}`,
    API_TOKENS: TOKEN,
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: receiver.secret,
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8'
  }, { args: [join(outdir, 'server.mjs')] })

  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
  const created = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: '{"id":9223372036854775807,"name":"Bundled fern"}' })
  t.equal(created.status, 200, await created.clone().text())
  const read = await fetch(`${server.url}/plants/9223372036854775807`, { headers })
  t.same(await read.json(), { name: 'Bundled fern' })
  t.ok(await eventually(() => receiver.ids().includes('9223372036854775807'), 30_000), 'its event delivered, by the delivery thread of the bundle')
  t.ok(server.logs().some(({ msg }) => msg === 'webhooks: delivering in a thread of its own'), 'the thread logged its start')

  const pages: Array<[string, RegExp]> = [
    ['/documentation/', /^text\/html/], ['/documentation/static/swagger-ui.css', /^text\/css/],
    ['/documentation/static/logo.svg', /^image\/svg\+xml/], ['/documentation/json', /^application\/json/]
  ]
  for (const [path, type] of pages) {
    const response = await fetch(server.url + path)
    t.equal(response.status, 200, path)
    t.match(response.headers.get('content-type'), type, path)
    t.ok((await response.arrayBuffer()).byteLength > 100, `${path}: a body`)
  }
})
