/**
 * A newer release upgrades the schema under a running store (on a real SQLite file and a real
 * PostgreSQL database): from the first write or probe that finds it, every plant route and /readyz
 * answer 503, nothing more is written (plants, events, claims, endpoint states), and the log says so
 * once, with both versions.
 */
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import t, { type Test } from 'tap'
import { openStore } from '../../plugins/store/index.js'
import type { OutboxStore, WebhookOutbox } from '../../plugins/store/outbox.js'
import { createFenceFunctionSql, SCHEMA_VERSION } from '../../plugins/store/postgres/schema-version.js'
import { SchemaNewerError } from '../../plugins/store/schema-version.js'
import { SQLITE_SCHEMA_VERSION } from '../../plugins/store/sqlite/schema-version.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN, type App } from '../helpers/app.js'
import { connect, freshDatabase, postgresSkip, sqlOn } from '../helpers/postgres.js'
import { eventPayloads } from '../../plugins/webhooks/events.js'

const NEWER_MESSAGE = new SchemaNewerError().message
// The fence a newer release makes as it upgrades.
const NEWER_FENCE = createFenceFunctionSql({ schema: 'public', table: 'plants' }, SCHEMA_VERSION + 1)
const OUTBOX = { endpoints: [{ name: 'e', events: ['plant.created' as const, 'plant.deleted' as const] }], payloads: eventPayloads }

/** What was written: plants, events, claimed deliveries and disabled endpoints, counted. */
interface Written { plants: number, events: number, claimed: number, disabled: number }

interface Engine {
  name: string
  known: number
  skip: string | false
  /** A new database: the store URL, a bump of its version as a newer release's upgrade makes it, and what it holds. */
  database (t: Test): Promise<{ url: string, where: string, bump: () => Promise<unknown>, written: () => Promise<Written> }>
}

const ENGINES: Engine[] = [{
  name: 'SQLite',
  known: SQLITE_SCHEMA_VERSION,
  skip: false,
  async database (t) {
    const file = join(t.testdir(), 'plants.db')
    const look = () => new Database(file)
    return {
      url: `sqlite:${file}`,
      where: `the SQLite database ${file}`,
      bump: async () => {
        const db = look()
        db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`)
        db.close()
      },
      written: async () => {
        const db = look()
        try {
          return db.prepare(`SELECT (SELECT count(*) FROM plants) AS plants, (SELECT count(*) FROM webhook_events) AS events,
            (SELECT count(*) FROM webhook_deliveries WHERE claim IS NOT NULL) AS claimed,
            (SELECT count(*) FROM webhook_endpoints WHERE enabled = 0) AS disabled`).get() as Written
        } finally {
          db.close()
        }
      }
    }
  }
}, {
  name: 'PostgreSQL',
  known: SCHEMA_VERSION,
  skip: await postgresSkip(),
  async database (t) {
    const url = await freshDatabase(t)
    return {
      url,
      where: 'the PostgreSQL table "public"."plants_schema_version"',
      // As a newer release upgrades (migration.ts): the tables written locked first, the fence made again with its version.
      bump: () => sqlOn(url, `BEGIN; LOCK TABLE plants IN SHARE ROW EXCLUSIVE MODE; ${NEWER_FENCE};
        UPDATE plants_schema_version SET version = ${SCHEMA_VERSION + 1}; COMMIT`),
      written: async () => (await sqlOn<Written>(url, `SELECT (SELECT count(*)::int FROM plants) AS plants,
        (SELECT count(*)::int FROM plants_webhook_events) AS events,
        (SELECT count(*)::int FROM plants_webhook_deliveries WHERE claim IS NOT NULL) AS claimed,
        (SELECT count(*)::int FROM plants_webhook_endpoints WHERE NOT enabled) AS disabled`))[0]
    }
  }
}]

/** The store at `url` with its outbox open, the app on it, and the lines its store logged. */
async function served (t: Test, url: string) {
  const lines: string[] = []
  const store = await openStore(url, { log: { warn: (line) => lines.push(line), info: () => {} } }) as PlantStore & OutboxStore
  t.teardown(() => store.close())
  const outbox = await store.openOutbox(OUTBOX)
  const app = await buildApp({ tokens: [TOKEN], store })
  t.teardown(() => app.close())
  return { store, outbox, app, lines }
}

const post = (app: App, id: number) => app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"p"}` })

/** The answer is the newer schema's 503, Error-shaped. */
function assertNewer (t: Test, reply: { statusCode: number, json: () => unknown }, label: string) {
  t.strictSame({ status: reply.statusCode, body: reply.json() }, { status: 503, body: { error: 503, message: NEWER_MESSAGE } }, `${label}: 503, the schema is newer`)
}

/** Every outbox write is refused with the newer schema's error. */
async function assertOutboxRefused (t: Test, outbox: WebhookOutbox) {
  const refused = { code: new SchemaNewerError().code }
  await t.rejects(outbox.claim([{ endpoint: 'e', limit: 10 }], 60_000), refused, 'a claim is refused')
  await t.rejects(outbox.setEnabled('e', false, 'test'), refused, 'an endpoint\'s state is not written')
  await t.rejects(outbox.prune(new Date()), refused, 'nor a prune')
}

const lineFor = (engine: Engine, where: string) => `plant-store: ${where}: schema version ${engine.known + 1} was written by a newer plant-store ` +
  `while this one (which knows up to ${engine.known}) ran: every plant route and /readyz answer 503 and nothing is written from now on; ` +
  'replace this instance with the newer release'

for (const engine of ENGINES) {
  t.test(`${engine.name}: the version bumped under a running store: creates, deletes, reads, outbox writes and /readyz refused; nothing written; one line`,
    { skip: engine.skip }, async (t) => {
      const { url, where, bump, written } = await engine.database(t)
      const { app, outbox, lines } = await served(t, url)
      t.equal((await post(app, 1)).statusCode, 200, 'a create before the upgrade')
      const before = await written()
      await bump()
      assertNewer(t, await post(app, 2), 'the next create')
      assertNewer(t, await app.inject({ method: 'DELETE', url: '/plants/1', headers: AUTH }), 'a delete')
      assertNewer(t, await app.inject({ url: '/plants/1', headers: AUTH }), 'a read, from then on')
      t.equal((await app.inject({ url: '/readyz' })).statusCode, 503, '/readyz answers 503')
      await assertOutboxRefused(t, outbox)
      for (let id = 3; id < 13; id++) t.equal((await post(app, id)).statusCode, 503)
      t.strictSame(await written(), before, 'nothing was written after the upgrade')
      t.strictSame(lines, [lineFor(engine, where)], 'one line, naming both versions')
    })

  t.test(`${engine.name}: an idle instance goes unready at its first probe after the upgrade`, { skip: engine.skip }, async (t) => {
    const { url, where, bump } = await engine.database(t)
    const { app, lines } = await served(t, url)
    t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'ready before')
    await bump()
    t.equal((await app.inject({ url: '/readyz' })).statusCode, 503, 'the next probe answers 503')
    assertNewer(t, await post(app, 1), 'and a create')
    t.strictSame(lines, [lineFor(engine, where)], 'one line')
  })

  t.test(`${engine.name}: a delivery that only claims finds the upgrade at its first claim, and claims nothing`, { skip: engine.skip }, async (t) => {
    const { url, where, bump, written } = await engine.database(t)
    const writer = await served(t, url)
    t.equal((await post(writer.app, 1)).statusCode, 200, 'an event to deliver')
    const { outbox, lines } = await served(t, url)
    await bump()
    await assertOutboxRefused(t, outbox)
    t.equal((await written()).claimed, 0, 'nothing was claimed')
    t.strictSame(lines, [lineFor(engine, where)], 'one line')
  })
}

t.test('PostgreSQL: a create that waited for the upgrade\'s lock sees the new version, and writes nothing', { skip: ENGINES[1].skip }, async (t) => {
  const { url, written } = await ENGINES[1].database(t)
  const { store, lines } = await served(t, url)
  await store.create({ id: 1n, name: 'before' })
  const upgrader = await connect(url)
  t.teardown(() => upgrader.end())
  await upgrader.query('BEGIN')
  await upgrader.query('LOCK TABLE plants IN SHARE ROW EXCLUSIVE MODE')
  await upgrader.query(NEWER_FENCE)
  await upgrader.query(`UPDATE plants_schema_version SET version = ${SCHEMA_VERSION + 1}`)
  const create = store.create({ id: 2n, name: 'waited' })
  create.catch(() => {})
  // The create is waiting for the lock once the server lists a session of the database waiting for one.
  const waiting = () => sqlOn<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`)
  while ((await waiting())[0].n === 0) await sleep(5)
  await upgrader.query('COMMIT')
  await t.rejects(create, { code: new SchemaNewerError().code }, 'the create is refused once the upgrade committed')
  t.equal((await written()).plants, 1, 'and was not written')
  t.equal(lines.length, 1, 'one line')
})

t.test('SQLite: a user_version no release writes, set under a running store: refused as well, the line saying what it is', async (t) => {
  const { url, where } = await ENGINES[0].database(t)
  const { app, lines } = await served(t, url)
  const db = new Database(url.slice('sqlite:'.length))
  db.pragma('user_version = -1')
  db.close()
  assertNewer(t, await post(app, 1), 'a create')
  t.strictSame(lines, [`plant-store: ${where}: schema version -1 is not one plant-store writes (a whole number, ${SQLITE_SCHEMA_VERSION} for this release): ` +
    'it was set by hand or by another program; if the data is plant-store\'s, set PRAGMA user_version to the version its tables are at, ' +
    'or restore a backup; every plant route and /readyz answer 503 and nothing is written from now on'])
})

t.test('PostgreSQL: a failure that has the store check its table again finds the newer version there', { skip: ENGINES[1].skip }, async (t) => {
  const { url, where, bump } = await ENGINES[1].database(t)
  const { app, lines } = await served(t, url)
  t.equal((await post(app, 1)).statusCode, 200)
  await bump()
  // A read, which the fence does not stop, fails on the column renamed: the table is checked again.
  await sqlOn(url, 'ALTER TABLE plants RENAME COLUMN tag TO label')
  assertNewer(t, await app.inject({ url: '/plants/1', headers: AUTH }), 'the read')
  assertNewer(t, await post(app, 2), 'and a create')
  t.strictSame(lines, [lineFor(ENGINES[1], where)], 'one line')
})
