/**
 * Scrapers without a token against a real server process whose SQLite outbox holds a large
 * backlog of pending webhook deliveries: a scrape does not read the whole backlog, so authenticated
 * reads keep their pace while four scrapers (another process) ask for /metrics without pause.
 */
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import t from 'tap'
import { attack, running } from '../../helpers/flood.js'
import { startServer } from '../../helpers/server-process.js'
import { newSecret } from '../../helpers/webhooks.js'

const TOKEN = 'test-token-metrics-scrape-flood'
const BACKLOG = 100_000
const SCRAPERS = 4
const READS = 100
const DAY = 24 * 3600 * 1000

/** `count` scrapers asking for /metrics one after another, without end; prints how many answered. Plain JavaScript. */
function scrapers (port: number, count: number) {
  const { Agent, get } = require('node:http') as typeof import('node:http')
  const agent = new Agent({ keepAlive: true, maxSockets: count })
  let answered = 0
  const next = () => {
    get({ port, host: '127.0.0.1', path: '/metrics', agent }, (response) => {
      response.resume()
      response.on('end', () => {
        process.stdout.write(`${++answered}\n`)
        next()
      })
    }).on('error', () => setTimeout(next, 10))
  }
  for (let index = 0; index < count; index++) next()
}

t.test(`${SCRAPERS} scrapers against ${BACKLOG} pending deliveries on SQLite: authenticated reads stay fast`, async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  // An endpoint nothing listens at: its deliveries stay pending.
  const server = await startServer(t, {
    API_TOKENS: TOKEN,
    DATABASE_URL: `sqlite:${file}`,
    WEBHOOK_URL: 'http://127.0.0.1:9/hook',
    WEBHOOK_SECRET: newSecret(),
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8'
  })
  // The service created the outbox when it started; the backlog is due tomorrow, so no worker claims it.
  const db = new Database(file)
  db.pragma('busy_timeout = 10000')
  const event = db.prepare('INSERT INTO webhook_events (message_id, type, payload, created_at) VALUES (?, \'plant.created\', \'{}\', ?)')
  const delivery = db.prepare('INSERT INTO webhook_deliveries (seq, endpoint, state, attempts, due_at) VALUES (?, \'default\', \'pending\', 0, ?)')
  const now = Date.now()
  db.transaction(() => {
    for (let index = 0; index < BACKLOG; index++) delivery.run(event.run(`msg_backlog${index}`, now).lastInsertRowid, now + DAY)
  })()
  db.close()
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  t.match(metrics, new RegExp(`plant_store_webhook_pending\\{endpoint="default"\\} ${BACKLOG}\\b`), 'the backlog is seen')

  const flood = attack(t, scrapers, [Number(new URL(server.url).port), SCRAPERS])
  await flood.counted(SCRAPERS * 5, 30_000)
  const elapsed: number[] = []
  for (let read = 0; read < READS; read++) {
    const start = performance.now()
    const response = await fetch(`${server.url}/plants/1`, { headers: { authorization: `Bearer ${TOKEN}` } })
    await response.arrayBuffer()
    elapsed.push(performance.now() - start)
    if (response.status !== 404) t.fail(`GET /plants/1 answered ${response.status}`)
  }
  flood.stop()
  elapsed.sort((a, b) => a - b)
  const median = elapsed[Math.floor(READS / 2)]
  t.comment(`authenticated reads with ${SCRAPERS} scrapers: median ${median.toFixed(1)} ms, p90 ${elapsed[Math.floor(READS * 0.9)].toFixed(1)} ms`)
  t.ok(median < 50, 'the median read takes less than 50 ms')
  t.ok(running(server.child), 'the process is still running')
})
