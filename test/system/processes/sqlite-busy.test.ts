import { join } from 'node:path'
import t from 'tap'
import { assertFaultsSummarised } from '../../helpers/fault-log.js'
import { isStoreUnavailable, plantBody, send, type Answer } from '../../helpers/load.js'
import { startServer } from '../../helpers/server-process.js'
import { holdWriteLock } from '../../helpers/sqlite-lock.js'

const TOKEN = 'sqlite-busy-token'
// Far above what a request takes here (on a busy machine too), far below what one write blocked
// for before: the busy_timeout's second, during which nothing else was answered.
const QUICK_MS = 1000

const slowest = (answers: Answer[]) => Math.round(Math.max(...answers.map(({ elapsed }) => elapsed)))

t.test('a file another process holds the write lock of: writes 503 quickly, health and reads keep answering', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  // Without load shedding (startServer's default), which would answer "overloaded" for a blocked loop: its latency shows.
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  t.equal((await request('POST', '/plants', plantBody('1', 'fern'))).status, 200, 'a create before the lock')

  const lock = await holdWriteLock(t, file)
  const [deletes, creates, health, reads] = await Promise.all([
    Promise.all(Array.from({ length: 15 }, () => request('DELETE', '/plants/1'))),
    Promise.all(Array.from({ length: 5 }, (_, index) => request('POST', '/plants', plantBody(String(index + 2), 'rose')))),
    request('GET', '/healthz'),
    Promise.all(Array.from({ length: 5 }, () => request('GET', '/plants/1')))
  ])
  t.comment(`while locked: slowest DELETE ${slowest(deletes)} ms, POST ${slowest(creates)} ms, ` +
    `/healthz ${Math.round(health.elapsed)} ms, GET ${slowest(reads)} ms`)
  for (const [label, answers] of [['DELETE', deletes], ['POST', creates]] as const) {
    t.ok(answers.every(isStoreUnavailable), `every ${label} answers 503, the store is unavailable`,
      { found: answers.map(({ status, text }) => `${status} ${text}`) })
    t.ok(slowest(answers) < QUICK_MS, `every ${label} answered within ${QUICK_MS} ms (${slowest(answers)} ms)`)
  }
  t.equal(health.status, 200, '/healthz 200')
  t.ok(health.elapsed < QUICK_MS, `/healthz answered within ${QUICK_MS} ms (${Math.round(health.elapsed)} ms)`)
  t.strictSame(reads.map(({ status, text }) => `${status} ${text}`), Array(5).fill('200 {"name":"fern"}'), 'reads answer 200')
  t.ok(slowest(reads) < QUICK_MS, `reads answered within ${QUICK_MS} ms (${slowest(reads)} ms)`)

  await lock.release()
  t.equal((await request('DELETE', '/plants/1')).status, 204, 'a delete once the lock is gone')
  t.equal((await request('POST', '/plants', plantBody('2', 'rose'))).status, 200, 'a create once the lock is gone')
})

t.test('creates failing for a lock another process holds: a line a second in the log, no stacks', async (t) => {
  const file = join(t.testdir(), 'plants.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN })
  const lock = await holdWriteLock(t, file)
  await assertFaultsSummarised(t, server, 3000, (id) => send(server.url, TOKEN, 'POST', '/plants', plantBody(String(id + 1), 'rose')))
  const [failed] = await server.logged(({ msg }) => msg === 'request failed')
  t.match(failed, { reason: /SQLITE_BUSY|locked/i }, 'the line says why')
  await lock.release()
})
