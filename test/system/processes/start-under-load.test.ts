/**
 * A service started on a busy machine: its own start-up work is no load to shed. Before, a start
 * under two busy loops answered some of its first requests 503 "overloaded" (6 of 30 seen).
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { plantBody, send } from '../../helpers/load.js'
import { startServer } from '../../helpers/server-process.js'

const BUNDLE = fileURLToPath(new URL('../../../dist/server.mjs', import.meta.url))
const TOKEN = 'start-under-load-token'

t.test('started while both cores are busy, the service answers its first 30 creates 200, none shed', async (t) => {
  const busy = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
  t.teardown(() => { for (const loop of busy) loop.kill('SIGKILL') })
  const folder = t.testdir({})
  // The default load shedding: 503 while the event loop's mean delay over a second passes 1000 ms.
  const server = await startServer(t, { API_TOKENS: TOKEN, DATABASE_URL: `sqlite:${join(folder, 'plants.db')}` }, { args: [BUNDLE] })
  const statuses: number[] = []
  for (let id = 1; id <= 30; id++) statuses.push((await send(server.url, TOKEN, 'POST', '/plants', plantBody(String(id), 'fern'))).status)
  t.same(statuses, Array(30).fill(200), 'every one of the first 30 answered 200')
})
