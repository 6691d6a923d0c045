/**
 * Two processes opening one new SQLite file at the same moment (two instances of a deployment
 * starting on a shared volume): both open it, and the file ends at this release's schema version,
 * each step applied once. Real processes, for a SQLite connection in one process never races another.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import t from 'tap'
import { SQLITE_SCHEMA_VERSION } from '../../../plugins/store/sqlite/schema-version.js'
import { NODE_ARGS } from '../../helpers/server-process.js'

const STORE = fileURLToPath(new URL('../../../plugins/store/sqlite/store.ts', import.meta.url))
const ROUNDS = 8

/** A process that waits until `at` (ms since the epoch), then opens and closes the store on `file`: its exit code and stderr. */
async function opener (file: string, at: number) {
  const script = `import { openSqliteStore } from ${JSON.stringify(STORE)}
    while (Date.now() < ${at}) {}
    const store = openSqliteStore(${JSON.stringify(file)})
    await store.close()`
  const child = spawn(process.execPath, [...NODE_ARGS, '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stderr }
}

t.test('two processes opening one new file at once both open it, at the latest version', async (t) => {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-concurrent-open-'))
  t.teardown(() => rmSync(folder, { recursive: true, force: true }))
  for (let round = 0; round < ROUNDS; round++) {
    const file = join(folder, `plants-${round}.db`)
    // Both start their loader well before the moment they open at, so that they open together.
    const at = Date.now() + 4000
    const results = await Promise.all([opener(file, at), opener(file, at)])
    t.same(results.map(({ code }) => code), [0, 0], `round ${round}: both opened it${results.map(({ stderr }) => stderr).join('').slice(0, 1500)}`)
    const db = new Database(file, { readonly: true })
    t.equal(db.pragma('user_version', { simple: true }), SQLITE_SCHEMA_VERSION, `round ${round}: at version ${SQLITE_SCHEMA_VERSION}`)
    db.close()
  }
})
