/**
 * The rolling upgrade, with two real releases on one PostgreSQL database: instance B runs the
 * landed release (built from its commit, as its own build script builds it) under a create load;
 * instance A, this build, starts on the same database and upgrades its schema. From then on B
 * writes nothing (the fence refuses its statements): its creates and /readyz answer 503 and it says
 * why in its log, while A serves; every plant either acknowledged is stored, none refused is.
 */
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { SCHEMA_VERSION } from '../../../plugins/store/postgres/schema-version.js'
import { plantBody } from '../../helpers/load.js'
import { freshDatabase, postgresSkip, sqlOn } from '../../helpers/postgres.js'
import { builtLandedRelease, LANDED_COMMIT } from '../../helpers/previous-release.js'
import { startReceiver } from '../../helpers/receiver.js'
import { exitWithin, startServer, type ServerProcess } from '../../helpers/server-process.js'
import { TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret } from '../../helpers/webhooks.js'

interface Answer { id: string, status: number, sentAt: number }

/** A create of `id` on `server`: its status, and when it was sent. */
async function create (server: ServerProcess, id: string): Promise<Answer> {
  const sentAt = performance.now()
  const response = await fetch(`${server.url}/plants`, {
    method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody(id, `plant ${id}`)
  })
  await response.text()
  return { id, status: response.status, sentAt }
}

const landed = builtLandedRelease()
// Without the landed commit in the clone's history the test is skipped with the reason, but fails under CI.
const skip = 'missing' in landed && process.env.CI !== 'true' ? landed.missing : await postgresSkip()

t.test(`PostgreSQL: a rolling upgrade from the landed release (${LANDED_COMMIT}) to this one`, { skip }, async (t) => {
  if ('missing' in landed) {
    t.fail(landed.missing)
    return
  }
  const url = await freshDatabase(t)
  const receiver = await startReceiver(t, (response) => { response.statusCode = 204; response.end() })
  const env = webhookEnv(url, receiver.url, newSecret())
  const old = await startServer(t, env, { args: [landed.server] })
  t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: 1 }], 'B, the landed release, made version 1')

  // B under load while A starts and upgrades.
  const answers: Answer[] = []
  let next = 1
  let upgradedAt = Infinity
  const load = (async () => {
    while (performance.now() < upgradedAt + 1000) answers.push(await create(old, String(next++)))
  })()
  await eventually(() => answers.length >= 20, 30_000)
  const upgraded = await startServer(t, env)
  upgradedAt = performance.now()
  await load
  t.strictSame(await sqlOn(url, 'SELECT version FROM plants_schema_version'), [{ version: SCHEMA_VERSION }], 'A upgraded the schema')

  const before = answers.filter(({ status }) => status === 200)
  const after = answers.filter(({ sentAt }) => sentAt > upgradedAt)
  t.ok(before.length > 0, `B acknowledged ${before.length} creates before the upgrade`)
  t.ok(after.length > 0 && after.every(({ status }) => status === 503), `B refused each of the ${after.length} creates sent once A was up`,
    { statuses: [...new Set(after.map(({ status }) => status))] })
  t.equal((await fetch(`${old.url}/readyz`)).status, 503, 'B\'s /readyz answers 503')
  const lines = old.logs().filter(({ msg }) => String(msg).includes(`schema version ${SCHEMA_VERSION} was written by a newer plant-store (this one knows up to 1)`))
  t.ok(lines.length >= 1, 'B\'s log says why, naming both versions', { lines: lines.map(({ msg }) => msg) })
  t.comment(`B logged the newer version in ${lines.length} line(s)`)

  const ours = await Promise.all(Array.from({ length: 20 }, (_, index) => create(upgraded, String(100_000 + index))))
  t.ok(ours.every(({ status }) => status === 200), 'A, the new release, serves')
  t.equal((await fetch(`${upgraded.url}/readyz`)).status, 200, 'A is ready')
  const stored = new Set((await sqlOn<{ id: string }>(url, 'SELECT id::text FROM plants')).map(({ id }) => id))
  const acknowledged = [...before, ...ours].map(({ id }) => id)
  t.ok(acknowledged.every((id) => stored.has(id)), `every plant acknowledged by either (${acknowledged.length}) is stored`)
  t.equal(stored.size, acknowledged.length, 'and none that was refused')
  t.ok(await eventually(() => receiver.received.some(({ body }) => body.includes('"id":100000,')), 30_000), 'A delivers its webhooks')

  for (const server of [old, upgraded]) {
    server.child.kill('SIGTERM')
    t.same(await exitWithin(server, 15_000), { code: 0, signal: null }, 'each stops cleanly')
  }
})
