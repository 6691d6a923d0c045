/**
 * The service's entry (service/entry-points/server.ts) as an operator runs it: a command (test/service/commands
 * has them all) instead of the service, a production start without tokens refused, a delivery-only start that
 * needs none. test/system/processes/server-process.test.ts has the rest.
 */
import { join } from 'node:path'
import t from 'tap'
import { schemaSql } from '../../service/commands/schema-sql.js'
import { startReceiver } from '../helpers/receiver.js'
import { assertStopsCleanly, exitWithin, linesOf, runEntry, spawnServer, START_TIMEOUT, startServer } from '../helpers/server-process.js'
import { webhookEnv } from '../helpers/webhook-crash.js'
import { newSecret } from '../helpers/webhooks.js'

// Each test waits on processes of its own: side by side.
t.jobs = 4

t.test('NODE_ENV=production without tokens refuses to start, with one line naming API_TOKENS', async (t) => {
  const server = spawnServer(t, { NODE_ENV: 'production' })
  // Its settings are read once every module is loaded: refusing takes as long as a start.
  t.same(await exitWithin(server, START_TIMEOUT), { code: 1, signal: null }, 'exits with code 1')
  const lines = linesOf(server.stderr())
  t.equal(lines.length, 1, `exactly one line on stderr: ${server.stderr()}`)
  t.match(lines[0], /^Invalid configuration: API_TOKENS or API_TOKENS_FILE must be set when NODE_ENV=production/)
  t.notMatch(server.stdout(), /Server listening/, 'it never listened')
})

t.test('`server schema-sql` prints the SQL an administrator runs, and exits 0 without serving', async (t) => {
  const { code, stdout } = await runEntry(['schema-sql'])
  t.equal(code, 0)
  t.equal(stdout.trim(), schemaSql().trim(), 'the SQL, as schemaSql() makes it')
})

t.test('API=off starts with no token configured and generates none: it serves no route that takes one', async (t) => {
  const receiver = await startReceiver(t)
  const server = await startServer(t, {
    ...webhookEnv(`sqlite:${join(t.testdir(), 'plants.db')}`, receiver.url, newSecret()), API: 'off', API_TOKENS: undefined
  })
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'it answers /healthz')
  t.equal((await fetch(`${server.url}/plants`, { method: 'POST', body: '{}' })).status, 404, 'no plant route')
  t.notMatch(server.stderr(), /generated token/, 'no token generated')
  server.child.kill('SIGTERM')
  assertStopsCleanly(t, server, await exitWithin(server, 15_000), 'stops cleanly')
})
