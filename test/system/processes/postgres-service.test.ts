import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import {
  assertCreatesSurviveSigkill, assertUnavailable, isErrorShaped, isStoreUnavailable, listedIds, plantBody, send,
  type Answer
} from '../../helpers/load.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { startServer, type ServerProcess } from '../../helpers/server-process.js'
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js'

const pgSkip = await postgresSkip()

const TOKEN = 'postgres-service-token'

const request = (server: ServerProcess, method: string, path: string, body?: string) =>
  send(server.url, TOKEN, method, path, body)

const create = (server: ServerProcess, id: string, name: string, tag?: string) =>
  request(server, 'POST', '/plants', plantBody(id, name, tag))

const isAlive = (server: ServerProcess) => server.child.exitCode === null && server.child.signalCode === null

t.test('two instances on one database: one id, one plant, and each sees what the other wrote', { skip: pgSkip }, async (t) => {
  const env = { DATABASE_URL: await freshDatabase(t), API_TOKENS: TOKEN }
  // Started together: both migrate the new database at once.
  const servers = await Promise.all([startServer(t, env), startServer(t, env)])
  const [a, b] = servers

  const id = '9007199254740993' // 2^53 + 1: a double would make it 2^53
  const answers = await Promise.all(Array.from({ length: 40 }, (_, index) =>
    create(servers[index % 2], id, `racer ${index}`)))
  const winners = answers.flatMap((answer, index) => answer.status === 200 ? [index] : [])
  const conflicts = answers.filter((answer) => isErrorShaped(answer, 409))
  const split = (status: number, server: number) =>
    answers.filter((answer, index) => answer.status === status && index % 2 === server).length
  t.comment(`40 concurrent creates of id ${id}: server A 200×${split(200, 0)} 409×${split(409, 0)}, ` +
    `server B 200×${split(200, 1)} 409×${split(409, 1)}`)
  t.equal(winners.length, 1, 'exactly one create answered 200', { found: answers.map(({ status }) => status) })
  t.equal(conflicts.length, 39, 'the other 39 answered 409, Error-shaped')
  const winner = `racer ${winners[0]}`
  for (const [label, server] of [['A', a], ['B', b]] as const) {
    const read = await request(server, 'GET', `/plants/${id}`)
    t.strictSame([read.status, JSON.parse(read.text)], [200, { name: winner }], `server ${label} reads the winner's plant`)
  }

  const other = '-9223372036854775807'
  const created = await create(a, other, 'fern', 'green')
  t.strictSame([created.status, JSON.parse(created.text)], [200, { name: 'fern', tag: 'green' }], 'created through A')
  const read = await request(b, 'GET', `/plants/${other}`)
  t.strictSame([read.status, JSON.parse(read.text)], [200, { name: 'fern', tag: 'green' }], 'read through B')
  const list = await request(b, 'GET', '/plants')
  t.equal(list.status, 200, 'listed by B')
  t.strictSame(listedIds(list.text), [other, id], 'B lists both plants, exact ids in ascending order')
})

t.test('every acknowledged create survives a SIGKILL right after the last 200 (PostgreSQL)', { skip: pgSkip }, async (t) => {
  await assertCreatesSurviveSigkill(t, await freshDatabase(t), { total: 300, concurrency: 16 })
})

t.test('a database outage: 503 within 2 s, no crash, and service again once it is back', { skip: pgSkip }, async (t) => {
  // Two databases, each behind its own proxy: one up for a running server, one already down.
  const [running, startedDown] = await Promise.all([freshDatabase(t), freshDatabase(t)])
  const proxied = async (direct: string): Promise<[string, TcpProxy]> => {
    const url = new URL(direct)
    const proxy = await startTcpProxy(t, url.hostname, Number(url.port || 5432))
    url.hostname = '127.0.0.1'
    url.port = String(proxy.port)
    return [url.href, proxy]
  }
  const [[runningUrl, runningProxy], [downUrl, downProxy]] = await Promise.all([proxied(running), proxied(startedDown)])
  downProxy.down()
  const [server, late] = await Promise.all([
    startServer(t, { DATABASE_URL: runningUrl, API_TOKENS: TOKEN }),
    startServer(t, { DATABASE_URL: downUrl, API_TOKENS: TOKEN })
  ])

  /**
   * Sends new creates until one answers 200, or gives up after `limit` ms: the time it took, and
   * the answers before it that were not a 503 Error.
   */
  async function resumed (target: ServerProcess, firstId: number, limit = 10_000) {
    const start = performance.now()
    const unexpected: Answer[] = []
    for (let id = firstId; performance.now() - start < limit; id++) {
      const answer = await create(target, String(id), `after the outage ${id}`)
      if (answer.status === 200) return { elapsed: performance.now() - start, unexpected }
      if (!isStoreUnavailable(answer)) unexpected.push(answer)
      await sleep(50)
    }
    return { elapsed: Infinity, unexpected }
  }

  t.test('the database goes away under a running server', async (t) => {
    const first = await create(server, '1', 'fern')
    t.equal(first.status, 200, 'a create while the database is up')

    runningProxy.down()
    const post = await create(server, '2', 'rose')
    const get = await request(server, 'GET', '/plants/1')
    const ready = await request(server, 'GET', '/readyz')
    t.comment(`503 latency while down: POST ${Math.round(post.elapsed)} ms, GET ${Math.round(get.elapsed)} ms, ` +
      `/readyz ${Math.round(ready.elapsed)} ms`)
    for (const [label, answer] of [['POST /plants', post], ['GET /plants/1', get], ['GET /readyz', ready]] as const) {
      assertUnavailable(t, answer, label)
      t.ok(answer.elapsed < 2000, `${label} answered within 2 s (${Math.round(answer.elapsed)} ms)`)
    }
    t.equal((await request(server, 'GET', '/healthz')).status, 200, 'the process is alive: /healthz 200')
    t.ok(isAlive(server), 'the process did not exit')

    runningProxy.up()
    const { elapsed: resume, unexpected } = await resumed(server, 3)
    t.strictSame(unexpected, [], 'until then, creates answer 503 Error')
    t.comment(`time to resume after the database came back: ${Math.round(resume)} ms`)
    t.ok(resume < 5000, `a create succeeds again within 5 s, without a restart (${Math.round(resume)} ms)`)
    t.equal((await request(server, 'GET', '/readyz')).status, 200, '/readyz 200 again')
    const kept = await request(server, 'GET', '/plants/1')
    t.strictSame([kept.status, JSON.parse(kept.text)], [200, { name: 'fern' }], 'the plant from before the outage is there')
    const refused = await request(server, 'GET', '/plants/2')
    t.equal(refused.status, 404, 'the create answered 503 did not store its plant')
    t.ok(isAlive(server), 'the same process served throughout')
  })

  t.test('a server started while the database is down', async (t) => {
    t.ok(late.logs().some(({ msg }) => msg?.startsWith('Server listening')), 'it started: "Server listening" logged')
    const post = await create(late, '1', 'fern')
    const get = await request(late, 'GET', '/plants/1')
    const ready = await request(late, 'GET', '/readyz')
    t.comment(`503 latency of a server started while down: POST ${Math.round(post.elapsed)} ms, ` +
      `GET ${Math.round(get.elapsed)} ms, /readyz ${Math.round(ready.elapsed)} ms`)
    for (const [label, answer] of [['POST /plants', post], ['GET /plants/1', get], ['GET /readyz', ready]] as const) {
      assertUnavailable(t, answer, label)
      t.ok(answer.elapsed < 2000, `${label} answered within 2 s (${Math.round(answer.elapsed)} ms)`)
    }
    t.ok(isAlive(late), 'the process did not exit')

    downProxy.up()
    const { elapsed: resume, unexpected } = await resumed(late, 2)
    t.strictSame(unexpected, [], 'until then, creates answer 503 Error')
    t.comment(`time to first 200 after the database came up: ${Math.round(resume)} ms`)
    t.ok(resume < 5000, `a create succeeds within 5 s of the database coming up (${Math.round(resume)} ms)`)
    t.equal((await request(late, 'GET', '/readyz')).status, 200, '/readyz 200')
    const list = await request(late, 'GET', '/plants')
    t.equal(list.status, 200, 'the plants are listed')
    t.notOk(listedIds(list.text).includes('1'), 'the create answered 503 did not store its plant')
  })
})
