/**
 * PostgreSQL ends the service's sessions over and over (pg_terminate_backend, as a session killer
 * or a failover does): the process lives on, answers 503 while it lasts and is ready again after.
 * A real PostgreSQL, a real server process.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { failureLines } from '../../helpers/fault-log.js'
import { isStoreUnavailable, plantBody, send, type Answer } from '../../helpers/load.js'
import { connect, freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'postgres-session-killer-token'
const KILL_FOR_MS = 6000

t.test('every session of the service killed every ~2 ms for 6 s: the process lives, 503 meanwhile, ready after', { skip: await postgresSkip() }, async (t) => {
  const url = await freshDatabase(t)
  const database = new URL(url).pathname.slice(1)
  const server = await startServer(t, { DATABASE_URL: url, API_TOKENS: TOKEN })
  const state = { exited: false, killing: true }
  server.exited.then(() => { state.exited = true }, () => {})
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  t.equal((await request('POST', '/plants', plantBody('1', 'before'))).status, 200, 'a create before')

  // The killer, on a connection to another database, so that it never kills itself.
  const killer = await connect(new URL('/postgres', url).href)
  t.teardown(() => killer.end())
  let kills = 0
  const killed = (async () => {
    while (state.killing) {
      const { rows } = await killer.query<{ ended: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])
      kills += rows.length
      await sleep(2)
    }
  })()

  const answers: Answer[] = []
  let next = 2
  const load = Array.from({ length: 8 }, async () => {
    while (state.killing && !state.exited) {
      const id = next++
      const answer = id % 4 === 0 ? request('GET', '/readyz') : request('POST', '/plants', plantBody(String(id), 'during'))
      answers.push(await answer.catch((error: Error) => ({ status: 0, text: error.message, elapsed: 0 })))
    }
  })
  await sleep(KILL_FOR_MS)
  state.killing = false
  await Promise.all([killed, ...load])
  t.comment(`${kills} sessions ended, ${answers.length} requests answered meanwhile`)
  t.ok(kills > 0, 'sessions were killed')
  t.notOk(state.exited, 'the process is still running', { stderr: server.stderr().slice(-2000) })
  const wrong = answers.filter((answer) => answer.status !== 200 && !isStoreUnavailable(answer))
  t.strictSame(wrong.slice(0, 5), [], 'each request answered 200 or the store\'s 503 (never a 500)')
  // The log: the 503s summed up, about a line a second, and not one stack (each was ~1.1 KB with two).
  const failures = failureLines(server.logs())
  t.ok(failures.length <= KILL_FOR_MS / 1000 + 3, `${failures.length} lines for ${answers.filter(isStoreUnavailable).length} 503s`)
  t.notOk(server.stdout().includes('"stack"'), 'no stack in the log')

  // Ready again once the sessions are left alone: asked every 100 ms for up to 20 s.
  let ready: Answer | undefined
  for (let tries = 0; tries < 200 && !state.exited; tries++) {
    ready = await request('GET', '/readyz').catch(() => undefined)
    if (ready?.status === 200) break
    await sleep(100)
  }
  t.equal(ready?.status, 200, '/readyz answers 200 again')
  t.equal((await request('POST', '/plants', plantBody('1000000', 'after'))).status, 200, 'a create after answers 200')
})
