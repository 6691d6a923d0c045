import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { exitWithin, runEntry, startServer } from '../../helpers/server-process.js'
import { plantBody } from '../../helpers/load.js'
import { startReceiver } from '../../helpers/receiver.js'
import { storedIds, TOKEN, webhookEnv } from '../../helpers/webhook-crash.js'
import { eventually, newSecret, verifyDelivery } from '../../helpers/webhooks.js'

const idIn = (body: string) => /"id":(-?\d+)/.exec(body)![1]

t.test('backup: a consistent copy taken under create load holds every acknowledged plant and its pending event', async (t) => {
  const dir = t.testdir({})
  const source = join(dir, 'plants.db')
  const copy = join(dir, 'backup.db')
  const state = { failing: true }
  const secret = newSecret()
  // Failing at first: the events stay pending in the outbox the backup copies; then it accepts.
  const receiver = await startReceiver(t, (response) => { response.statusCode = state.failing ? 503 : 204; response.end() })
  // Retries every second or so: restored, the pending events go out soon.
  const env = { ...webhookEnv(`sqlite:${source}`, receiver.url, secret), WEBHOOK_RETRY_SCHEDULE: Array(60).fill('1s').join(',') }
  const server = await startServer(t, env)

  const acknowledged: string[] = []
  const load = { stopped: false }
  let id = 0
  const creating = Promise.all(Array.from({ length: 8 }, async () => {
    while (!load.stopped) {
      const plant = String(++id)
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: plantBody(plant, `plant ${plant}`)
      })
      await response.text()
      if (response.status === 200) acknowledged.push(plant)
    }
  }))
  t.ok(await eventually(() => acknowledged.length >= 200, 60_000), 'creates are being acknowledged')
  const before = [...acknowledged]
  const backup = await runEntry(['backup', copy], { DATABASE_URL: `sqlite:${source}` })
  const during = acknowledged.length - before.length
  load.stopped = true
  await creating
  t.equal(backup.code, 0, `the backup command succeeds: ${backup.stderr}`)
  t.match(backup.stdout, /^Backed up .*plants\.db to .*backup\.db: \d+ plants, integrity_check ok\n$/)
  t.ok(during > 0, `the service took creates while the backup ran (${during} acknowledged meanwhile)`)
  server.child.kill('SIGTERM')
  t.same(await exitWithin(server, 15_000), { code: 0, signal: null }, 'the service stops cleanly')

  const db = new Database(copy, { readonly: true })
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok', 'the copy passes integrity_check')
  const plants = new Set((db.prepare('SELECT id FROM plants').pluck().safeIntegers().all() as bigint[]).map(String))
  const events = new Set((db.prepare("SELECT payload FROM webhook_events WHERE type = 'plant.created'").pluck().all() as string[]).map(idIn))
  db.close()
  t.same(before.filter((plant) => !plants.has(plant)), [], `every plant acknowledged before the backup began is in the copy (${before.length})`)
  t.same(before.filter((plant) => !events.has(plant)), [], 'and its plant.created event')
  t.same([...events].filter((plant) => !plants.has(plant)), [], 'no event without its plant')

  // Restore: a service started on the copy serves the plants and delivers their pending events.
  state.failing = false
  const firstDelivered = receiver.received.length
  const restored = await startServer(t, { ...env, DATABASE_URL: `sqlite:${copy}` })
  const stored = await storedIds(restored)
  t.same(before.filter((plant) => !stored.has(plant)), [], 'the restored service serves every plant')
  const delivered = () => new Set(receiver.received.slice(firstDelivered).map(({ body }) => idIn(body)))
  t.ok(await eventually(() => before.every((plant) => delivered().has(plant)), 60_000), 'and delivers every pending event')
  for (const { headers, body } of receiver.received.slice(firstDelivered)) verifyDelivery(secret, headers, body)
  restored.child.kill('SIGTERM')
  t.same(await exitWithin(restored, 15_000), { code: 0, signal: null }, 'the restored service stops cleanly')
})
