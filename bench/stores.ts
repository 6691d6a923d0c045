// Store set-up outside the service: bulk preloads, the PostgreSQL databases of a run, and pgbench.
import { writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import pg from 'pg'
import { spawnTracked } from './targets.js'

const BATCH = 100_000

/**
 * Stores plants -1 … -n (negative, so never an id the load uses) in an SQLite file whose schema
 * the service created. Run while no server has the file open.
 */
export function preloadSqlite (file: string, n: number): void {
  const db = new Database(file)
  try {
    const insert = db.prepare<[number, string]>('INSERT INTO plants (id, name, tag) VALUES (?, ?, NULL)')
    const batch = db.transaction((from: number, to: number) => {
      for (let id = from; id <= to; id++) insert.run(-id, 'preloaded')
    })
    for (let from = 1; from <= n; from += BATCH) batch(from, Math.min(n, from + BATCH - 1))
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
}

async function withClient<R> (url: string, work: (client: pg.Client) => Promise<R>): Promise<R> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** The server the benches make their databases on (and drop them from): BENCH_POSTGRES_URL. */
export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** Whether a PostgreSQL server answers at `adminUrl`; the reason when it does not. */
export async function postgresUnreachable (adminUrl: string): Promise<string | undefined> {
  try {
    await withClient(adminUrl, (client) => client.query('SELECT 1'))
    return undefined
  } catch (error) {
    return (error as Error).message || String(error)
  }
}

/** The URL of database `name` on the server of `adminUrl`. */
function databaseUrl (adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.href
}

/** Makes database `name` on the server of `adminUrl`; its URL. */
export async function createDatabase (adminUrl: string, name: string): Promise<string> {
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`))
  return databaseUrl(adminUrl, name)
}

export async function dropDatabase (adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))
}

/** Stores plants -1 … -n in the `plants` table the service created. */
export async function preloadPostgres (url: string, n: number): Promise<void> {
  await withClient(url, async (client) => {
    await client.query("INSERT INTO plants (id, name, tag) SELECT -g, 'preloaded', NULL FROM generate_series(1, $1::int8) g", [n])
    await client.query('ANALYZE plants')
    // Write the preload out now rather than in a checkpoint during a measured run.
    await client.query('CHECKPOINT')
  })
}

export interface PgbenchResult {
  tps: number
  transactions: number
  failed: number
  latencyAverageMs: number
}

/** Creates the table pgbench inserts into and the script it runs; returns the script's path. */
export async function preparePgbench (url: string, scriptFile: string): Promise<string> {
  await withClient(url, (client) =>
    client.query('CREATE TABLE plants_pgbench (id int8 PRIMARY KEY, name text NOT NULL, tag text)'))
  writeFileSync(scriptFile, [
    '\\set id random(1, 9000000000000000000)',
    "INSERT INTO plants_pgbench (id, name, tag) VALUES (:id, 'Monstera', 'tropical');",
    ''
  ].join('\n'))
  return scriptFile
}

/**
 * Runs pgbench's single-row INSERT with the same concurrency as the HTTP load. It inherits this
 * process's CPU affinity, so it stands where autocannon stands.
 */
export async function runPgbench (url: string, scriptFile: string, connections: number, seconds: number): Promise<PgbenchResult> {
  const args = ['-n', '-c', String(connections), '-j', String(Math.min(2, connections)), '-T', String(seconds), '-f', scriptFile, url]
  const { child } = spawnTracked('pgbench', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  // 'close' rather than 'exit': all of the output has been read by then.
  await new Promise((resolve) => {
    child.once('close', resolve)
    child.once('error', resolve)
  })
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN)
  const result = {
    tps: number(/^tps = ([\d.]+)/m),
    transactions: number(/^number of transactions actually processed: (\d+)/m),
    failed: number(/^number of failed transactions: (\d+)/m),
    latencyAverageMs: number(/^latency average = ([\d.]+) ms/m)
  }
  if (child.exitCode !== 0 || Number.isNaN(result.tps)) {
    throw new Error(`pgbench failed (code ${child.exitCode}): ${output.trim().slice(-1000)}`)
  }
  return result
}
