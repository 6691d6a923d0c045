import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { buildApp } from '../../service/app.js'
import type { PlantStoreOptions } from '../../src/plugin.js'
import { AUTH, collectLogs, TOKEN, type App } from './app.js'
import { freshDatabase, SERVER_URL, sqlOn } from './postgres.js'

const TABLE_LINE = /^plant-store: the PostgreSQL table /

/**
 * A database with the store's table made by its owner, and a login role of the store's own with
 * the three privileges, which owns nothing: privileges can be taken from it. `url` logs in as it.
 */
export async function ownedByAnotherRole (t: Test) {
  const admin = await freshDatabase(t)
  const role = `plant_store_role_${randomBytes(4).toString('hex')}`
  await sqlOn(SERVER_URL, `CREATE ROLE ${role} LOGIN`)
  t.teardown(() => sqlOn(SERVER_URL, `DROP ROLE IF EXISTS ${role}`))
  t.teardown(() => sqlOn(admin, `DROP OWNED BY ${role}`)) // runs first: the database still exists
  await sqlOn(admin, 'CREATE TABLE plants (id int8 PRIMARY KEY, name text NOT NULL, tag text)')
  await sqlOn(admin, `GRANT SELECT, INSERT, DELETE ON plants TO ${role}`)
  const url = new URL(admin)
  url.username = role
  return { admin, role, url: url.href }
}

/** The service on the PostgreSQL store at `store`, and the log lines it wrote about its table so far. */
export async function servedWithTableLog (t: Test, store: string, options: Partial<PlantStoreOptions> = {}) {
  const { lines, logger } = collectLogs('info')
  const app = await buildApp({ tokens: [TOKEN], store, ...options }, { logger })
  t.teardown(() => app.close())
  const tableLines = () => lines.filter(({ msg }) => TABLE_LINE.test(String(msg))).map(({ msg }) => String(msg))
  return { app, tableLines }
}

export const getPlant = (app: App, id: number) => app.inject({ url: `/plants/${id}`, headers: AUTH })
export const readiness = (app: App) => app.inject({ url: '/readyz' })

/**
 * Once the table has been made unusable under the running service: 20 creates at once answer no
 * 500 and no 409, and each 200 among them was stored under its id; then a create, a create of the
 * taken id 1 and /readyz answer 503.
 */
export async function assertRefusedOnceBroken (t: Test, app: App, admin: string, post: (app: App, id: number) => Promise<{ statusCode: number }>) {
  const creates = await Promise.all(Array.from({ length: 20 }, (_, index) => post(app, index + 2)))
  const statuses = creates.map(({ statusCode }) => statusCode)
  t.notOk(statuses.includes(500), 'no create answers 500', { found: statuses })
  t.notOk(statuses.includes(409), 'no create of a new id answers 409', { found: statuses })
  const stored = new Set((await sqlOn<{ id: string }>(admin, 'SELECT id::text FROM plants')).map(({ id }) => id))
  t.ok(creates.every(({ statusCode }, index) => statusCode !== 200 || stored.has(String(index + 2))), 'each 200 was stored, under its id')
  t.equal((await post(app, 100)).statusCode, 503, 'then a create answers 503')
  t.equal((await readiness(app)).statusCode, 503, '/readyz answers 503')
  t.equal((await post(app, 1)).statusCode, 503, 'a create of a taken id: 503, not 409')
}
