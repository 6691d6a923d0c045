import { loadConfig } from '../config/index.js'

const USAGE = 'Usage: node server.mjs backup <destination file> (DATABASE_URL=sqlite:<path> names the store) | node server.mjs schema-sql'

/** Where a command reads its settings and writes its output: the process's own, unless a test gives others. */
export interface CommandIo {
  env: NodeJS.ProcessEnv
  stdout: { write (text: string): unknown }
  stderr: { write (text: string): unknown }
}

/**
 * Operators' commands, run by the same file as the service (`node server.mjs <command> ...`): they
 * work wherever it is deployed. Each prints one line and returns the exit code.
 */
export async function runCommand (args: string[], { env, stdout, stderr }: CommandIo = process): Promise<number> {
  const fail = (line: string) => {
    stderr.write(`${line}\n`)
    return 1
  }
  const [command, destination, ...rest] = args
  if (command === 'schema-sql' && args.length === 1) {
    // Loaded only here: a runtime folder built for SQLite alone has no pg.
    const { schemaSql } = await import('../commands/schema-sql.js')
    stdout.write(schemaSql())
    return 0
  }
  if (command !== 'backup' || destination === undefined || rest.length > 0) return fail(USAGE)
  const url = loadConfig(env).DATABASE_URL
  if (!url.startsWith('sqlite:')) return fail('backup copies a SQLite store; DATABASE_URL is not sqlite:<path> (for PostgreSQL use pg_dump)')
  try {
    // Loaded only here: a runtime folder built for PostgreSQL alone has no better-sqlite3.
    const { backupSqlite } = await import('../commands/backup.js')
    const { plants } = backupSqlite(url.slice('sqlite:'.length), destination)
    stdout.write(`Backed up ${url.slice('sqlite:'.length)} to ${destination}: ${plants} plants, integrity_check ok\n`)
    return 0
  } catch (error) {
    return fail(`Backup failed: ${(error as Error).message}`)
  }
}
