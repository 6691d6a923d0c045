import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import pg from 'pg'

export const TOKEN = 'host-example-token-0123456789'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_BODY = { ...AUTH, 'content-type': 'application/json' }

const SERVER_URL = process.env.PLANT_STORE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function onServer (sql: string) {
  const client = new pg.Client({ connectionString: SERVER_URL, connectionTimeoutMillis: 2000 })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

/**
 * A new PostgreSQL database for one test, dropped after it; undefined (the test skips) when no
 * server answers, which CI (CI=true) does not allow.
 */
export async function newDatabase (t: TestContext): Promise<string | undefined> {
  const name = `plant_store_host_${randomBytes(6).toString('hex')}`
  try {
    await onServer(`CREATE DATABASE ${name}`)
  } catch (error) {
    if (process.env.CI === 'true') throw error
    t.skip(`PostgreSQL is unreachable (${(error as Error).message})`)
    return undefined
  }
  t.after(() => onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  return url.href
}
