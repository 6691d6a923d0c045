import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { PlantExistsError } from '../../../plugins/http/errors.js'
import { openPostgresStore } from '../../../plugins/store/postgres/store.js'
import { isErrorShaped, plantBody, send, type Answer } from '../../helpers/load.js'
import { connect as connectTo, freshDatabase, postgresSkip, sqlOn } from '../../helpers/postgres.js'
import { startServer, type ServerProcess } from '../../helpers/server-process.js'
import { median } from '../../helpers/time.js'

const pgSkip = await postgresSkip()

const TOKEN = 'postgres-contention-token'

const create = (server: ServerProcess, id: number | string, name: string) =>
  send(server.url, TOKEN, 'POST', '/plants', plantBody(String(id), name))

/**
 * Creates the plants `ids` on `server` in one burst: a connection each is opened first, then every
 * request is written in one go, so that the server reads them together (and batches them).
 */
async function burst (server: ServerProcess, ids: number[], name: string): Promise<Answer[]> {
  const { hostname, port, host } = new URL(server.url)
  const sockets = await Promise.all(ids.map(() => new Promise<Socket>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket)).on('error', reject)
  })))
  const start = performance.now()
  const answers = sockets.map((socket) => new Promise<Answer>((resolve) => {
    let text = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1])
      resolve({ status, text: text.slice(text.indexOf('\r\n\r\n') + 4), elapsed: performance.now() - start })
    })
  }))
  sockets.forEach((socket, index) => {
    const body = plantBody(String(ids[index]), name)
    socket.write(`POST /plants HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
  })
  return Promise.all(answers)
}

const neither200Nor409 = (answers: Answer[]) =>
  answers.filter((answer) => answer.status !== 200 && !isErrorShaped(answer, 409))

t.test('two instances creating the same ids in opposite orders: each id 200 once, 409 otherwise, nothing else', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const env = { DATABASE_URL: url, API_TOKENS: TOKEN }
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  const groups = 10
  const size = 100
  const ids = groups * size
  const answers = new Map<ServerProcess, Answer[]>([[a, []], [b, []]])
  // Group after group, each instance sends the group's ids all at once, in opposite orders: their
  // batches lock the same rows going up and going down, unless the store orders them.
  for (let group = 0; group < groups; group++) {
    const ascending = Array.from({ length: size }, (_, index) => group * size + index + 1)
    await Promise.all([
      burst(a, ascending, 'a').then((group) => answers.get(a)!.push(...group)),
      burst(b, ascending.toReversed(), 'b').then((group) => answers.get(b)!.push(...group))
    ])
  }
  const all = [...answers.values()].flat()
  const others = neither200Nor409(all)
  t.comment(`${all.length} creates of ${ids} ids: ${all.filter(({ status }) => status === 200).length} × 200, ` +
    `${all.filter(({ status }) => status === 409).length} × 409, ${others.length} neither ` +
    `(${[...new Set(others.map(({ status }) => status))].join(', ')})`)
  t.equal(others.length, 0, 'every create answered 200 or 409')
  t.equal(all.filter(({ status }) => status === 200).length, ids, 'one 200 for each id')
  const [{ count }] = await sqlOn<{ count: number }>(url, 'SELECT count(*)::int AS count FROM plants')
  t.equal(count, ids, 'each id stored')
})

t.test('two stores (two instances\' pools) with batches of the same ids in opposite orders: no deadlock', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const [a, b] = await Promise.all([openPostgresStore(url), openPostgresStore(url)])
  t.teardown(() => Promise.all([a.close(), b.close()]))
  const results: Array<PromiseSettledResult<unknown>> = []
  for (let group = 0n; group < 10n; group++) {
    const ids = Array.from({ length: 200 }, (_, index) => group * 200n + BigInt(index) + 1n)
    // The creates of one turn of the event loop are one batch: 200 ids going up, 200 going down.
    results.push(...await Promise.allSettled([
      ...ids.map((id) => a.create({ id, name: 'a' })),
      ...ids.toReversed().map((id) => b.create({ id, name: 'b' }))
    ]))
  }
  const others = results.filter((result) => result.status === 'rejected' && !(result.reason instanceof PlantExistsError))
  t.comment(`${results.length} creates of 2000 ids: ${others.length} neither stored nor PlantExistsError`)
  t.equal(others.length, 0, 'every create stored or refused as taken')
  t.equal(results.filter(({ status }) => status === 'fulfilled').length, 2000, 'each id stored once')
})

t.test('a row held by another session fails its own create only, not the others of its batch', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const server = await startServer(t, { DATABASE_URL: url, API_TOKENS: TOKEN })
  t.equal((await create(server, 1, 'first')).status, 200, 'the table is there')
  const blocker = await connectTo(url)
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  const held = 1_000_000
  await blocker.query('INSERT INTO plants (id, name) VALUES ($1, $2)', [held, 'uncommitted'])

  const rounds = 5
  const neighbours: Answer[] = []
  const stuck: Answer[] = []
  for (let round = 0; round < rounds; round++) {
    // The held id among 9 others, in one burst: they share a batch, or a few.
    const ids = Array.from({ length: 9 }, (_, index) => 100 + round * 10 + index)
    const [own, ...others] = await burst(server, [held, ...ids], 'rush')
    stuck.push(own)
    neighbours.push(...others)
  }
  const failed = neighbours.filter(({ status }) => status !== 200)
  t.comment(`${rounds} rounds: ${failed.length} of ${neighbours.length} unrelated creates not 200 ` +
    `(median ${Math.round(median(neighbours.map(({ elapsed }) => elapsed)))} ms); the held id: ` +
    `${stuck.map(({ status }) => status).join(', ')} (median ${Math.round(median(stuck.map(({ elapsed }) => elapsed)))} ms)`)
  t.equal(failed.length, 0, 'every unrelated create answered 200', { found: failed })
  t.ok(stuck.every((answer) => isErrorShaped(answer, 503)), 'the held id answered 503 each time, never 409')
  t.ok(stuck.every(({ elapsed }) => elapsed < 2000), 'within 2 s')

  await blocker.query('ROLLBACK')
  t.equal((await create(server, held, 'after')).status, 200, 'the held id is stored once the other session rolls back')
})

t.test('one batch with a row held by another session: only that create fails', { skip: pgSkip }, async (t) => {
  const url = await freshDatabase(t)
  const store = await openPostgresStore(url)
  t.teardown(() => store.close())
  await store.create({ id: 1n, name: 'first' })
  const blocker = await connectTo(url)
  t.teardown(() => blocker.end())
  await blocker.query('BEGIN')
  await blocker.query("INSERT INTO plants (id, name) VALUES (1000000, 'uncommitted')")
  const timed = async (create: Promise<unknown>) => {
    const start = performance.now()
    const outcome = await create.then(() => 200, (error) => (error as { statusCode?: number }).statusCode ?? 500)
    return { outcome, elapsed: performance.now() - start }
  }
  const rounds = 5
  const neighbours: Array<{ outcome: number, elapsed: number }> = []
  const stuck: Array<{ outcome: number, elapsed: number }> = []
  for (let round = 0n; round < BigInt(rounds); round++) {
    // The creates of one turn of the event loop: one batch.
    const [own, ...others] = await Promise.all([1000000n, ...Array.from({ length: 9 }, (_, index) => 100n + round * 10n + BigInt(index))]
      .map((id) => timed(store.create({ id, name: 'batch' }))))
    stuck.push(own)
    neighbours.push(...others)
  }
  const failed = neighbours.filter(({ outcome }) => outcome !== 200)
  t.comment(`${rounds} batches: ${failed.length} of ${neighbours.length} unrelated creates failed ` +
    `(median ${Math.round(median(neighbours.map(({ elapsed }) => elapsed)))} ms); the held id: ` +
    `${stuck.map(({ outcome }) => outcome).join(', ')} (median ${Math.round(median(stuck.map(({ elapsed }) => elapsed)))} ms)`)
  t.equal(failed.length, 0, 'every unrelated create is stored')
  t.ok(stuck.every(({ outcome, elapsed }) => outcome === 503 && elapsed < 2000), 'the held id is 503 within 2 s each time')
  await blocker.query('ROLLBACK')
})
