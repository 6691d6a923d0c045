/**
 * PostgreSQL down, at start or later: the log says so in a line a second, without stacks, and
 * says when readiness changes, not on every probe. A real PostgreSQL, a real server process.
 */
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import { assertFaultsSummarised, isReadinessLine, readinessLines } from '../../helpers/fault-log.js'
import { plantBody, send } from '../../helpers/load.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { startServer } from '../../helpers/server-process.js'
import { startTcpProxy } from '../../helpers/tcp-proxy.js'

const TOKEN = 'postgres-fault-log-token'
const FLOOD_MS = 3000
const PROBES = 20

/** A local port where nothing listens: connections to it are refused. */
async function refusingPort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

const noStack = (lines: unknown[]) => !lines.some((line) => JSON.stringify(line).includes('stack'))

t.test('PostgreSQL refusing connections from the start: one start-up warning, then a line a second', async (t) => {
  const url = `postgres://postgres@127.0.0.1:${await refusingPort()}/test`
  const server = await startServer(t, { DATABASE_URL: url, API_TOKENS: TOKEN })
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  const warning = await server.waitForLog(({ msg }) => msg?.includes('/readyz') === true, 10_000).catch(() => undefined)
  t.match(warning, { level: 40, reason: /ECONNREFUSED/ }, 'a warning at start says the store does not answer, and why', { found: warning })

  for (let probe = 0; probe < PROBES; probe++) t.equal((await request('GET', '/readyz')).status, 503, `/readyz ${probe + 1} answers 503`)
  t.equal(readinessLines(server.logs()).length, 1, `${PROBES} probes while down add no line`, { lines: readinessLines(server.logs()) })
  t.ok(noStack(readinessLines(server.logs())), 'no stack')

  const perSecond = await assertFaultsSummarised(t, server, FLOOD_MS, (id) => request('POST', '/plants', plantBody(String(id + 1), 'fern')))
  t.ok(perSecond < 10_000, `the log grows by less than 10 KB/s under the fault (${perSecond} B/s)`)
})

t.test('a real PostgreSQL cut off, then back: a warning, a line a second, then one line when ready again', { skip: await postgresSkip() }, async (t) => {
  const url = new URL(await freshDatabase(t))
  const proxy = await startTcpProxy(t, url.hostname, Number(url.port || 5432))
  url.host = `127.0.0.1:${proxy.port}`
  const server = await startServer(t, { DATABASE_URL: url.href, API_TOKENS: TOKEN })
  const request = (method: string, path: string, body?: string) => send(server.url, TOKEN, method, path, body)
  t.equal((await request('POST', '/plants', plantBody('1', 'before'))).status, 200, 'a create before')
  t.equal((await request('GET', '/readyz')).status, 200, 'ready')
  t.same(readinessLines(server.logs()), [], 'a store ready at start says nothing')

  proxy.down()
  for (let probe = 0; probe < PROBES; probe++) t.equal((await request('GET', '/readyz')).status, 503, `/readyz ${probe + 1} answers 503`)
  t.match(await server.logged(isReadinessLine), [{ level: 40, reason: String }], `one warning for ${PROBES} probes while down`)
  await assertFaultsSummarised(t, server, FLOOD_MS, (id) => request('POST', '/plants', plantBody(String(id + 2), 'fern')))

  proxy.up()
  let ready = 0
  for (let tries = 0; tries < 100 && ready !== 200; tries++) ready = (await request('GET', '/readyz')).status
  for (let probe = 0; probe < PROBES; probe++) await request('GET', '/readyz')
  t.equal(ready, 200, 'ready again once PostgreSQL is back')
  await server.logged((line) => isReadinessLine(line) && line.level === 30)
  t.match(readinessLines(server.logs()), [{ level: 40 }, { level: 30 }], 'then one line (info) when ready again')
  t.ok(noStack(readinessLines(server.logs())), 'no stack')
})
