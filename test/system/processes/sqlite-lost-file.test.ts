import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { isStoreUnavailable, listedIds, plantBody, send } from '../../helpers/load.js'
import { exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'sqlite-lost-file-token'

t.test('the data folder removed under a running server: creates 503, /readyz 503, nothing acknowledged is lost', async (t) => {
  const folder = join(t.testdir(), 'data')
  mkdirSync(folder)
  const env = { DATABASE_URL: `sqlite:${join(folder, 'plants.db')}`, API_TOKENS: TOKEN }
  const server = await startServer(t, env)
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  t.equal((await request('POST', '/plants', plantBody('1', 'before'))).status, 200, 'a create before the removal')

  rmSync(folder, { recursive: true })
  const creates = await Promise.all(Array.from({ length: 100 }, (_, index) =>
    request('POST', '/plants', plantBody(String(index + 2), 'after'))))
  const acknowledged = creates.flatMap((answer, index) => answer.status === 200 ? [String(index + 2)] : [])
  t.comment(`after the removal: ${acknowledged.length} of 100 creates answered 200`)
  t.ok(creates.every(isStoreUnavailable), 'every create answers 503, the store is unavailable',
    { found: [...new Set(creates.map(({ status, text }) => `${status} ${text}`))] })
  const ready = await request('GET', '/readyz')
  t.ok(isStoreUnavailable(ready), '/readyz answers 503', { found: ready })
  t.ok(isStoreUnavailable(await request('GET', '/plants/1')), 'a read answers 503: its plant is gone with the file')
  t.ok(isStoreUnavailable(await request('DELETE', '/plants/1')), 'so does a delete')
  t.equal((await request('GET', '/healthz')).status, 200, '/healthz 200: the process runs')

  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 10_000), { code: 0, signal: null }, 'the server stops cleanly')
  // A missing folder is refused at start: the operator makes it again.
  mkdirSync(folder)
  const again = await startServer(t, env)
  const list = await send(again.url, TOKEN, 'GET', '/plants')
  t.strictSame(listedIds(list.text), acknowledged, 'after a restart, every plant acknowledged is there')
})
