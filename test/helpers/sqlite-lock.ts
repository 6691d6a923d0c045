import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './server-process.js'

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url))

// Run by a second node process: takes the write lock (BEGIN IMMEDIATE and a write), says so, and
// rolls back once its stdin ends.
const HOLDER = `
const Database = require('better-sqlite3')
const db = new Database(process.argv[1])
db.exec('BEGIN IMMEDIATE')
db.prepare("INSERT INTO plants (id, name) VALUES (-1, 'never committed')").run()
process.stdout.write('locked\\n')
process.stdin.resume().on('end', () => {
  db.exec('ROLLBACK')
  db.close()
})
`

export interface HeldLock {
  /** Rolls back and resolves once the other process has exited. */
  release (): Promise<void>
}

/**
 * Another process holding the write lock of the SQLite file `file` (which has the plants table),
 * as a backup tool or a person at the sqlite3 shell would; it is killed at teardown if still there.
 */
export async function holdWriteLock (t: Teardown, file: string): Promise<HeldLock> {
  const child = spawn(process.execPath, ['-e', HOLDER, file], { cwd: PROJECT_ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
    return exited
  })
  const [said] = await once(child.stdout, 'data') as [Buffer]
  if (said.toString() !== 'locked\n') throw new Error(`the lock holder said ${JSON.stringify(said.toString())}`)
  return {
    async release () {
      child.stdin.end()
      await exited
    }
  }
}
