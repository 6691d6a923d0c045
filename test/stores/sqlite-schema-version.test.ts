import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openStore } from '../../plugins/store/index.js'
import { SQLITE_SCHEMA_VERSION } from '../../plugins/store/sqlite/schema-version.js'
import { openSqliteStore } from '../../plugins/store/sqlite/store.js'

/** A file the store made, then its user_version set by hand. */
async function fileAtVersion (dir: string, version: number): Promise<string> {
  const file = join(dir, 'plants.db')
  await openSqliteStore(file).close()
  const db = new Database(file)
  db.pragma(`user_version = ${version}`)
  db.close()
  return file
}

const storedVersion = (file: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return db.pragma('user_version', { simple: true })
  } finally {
    db.close()
  }
}

for (const [kind, version] of [['negative', -1], ['huge, past any release', 2_000_000], ['the largest SQLite keeps', 2 ** 31 - 1]] as const) {
  t.test(`a user_version that is ${kind} (${version}): refused at open with one line naming the file and what to do; left as it was`, async (t) => {
    const file = await fileAtVersion(t.testdir(), version)
    await t.rejects(openStore(`sqlite:${file}`), {
      message: `SQLite file ${file}: schema version ${version} is not one plant-store writes (a whole number, ${SQLITE_SCHEMA_VERSION} for this release): ` +
        'it was set by hand or by another program; if the data is plant-store\'s, set PRAGMA user_version to the version its tables are at, ' +
        'or restore a backup'
    })
    t.equal(storedVersion(file), version, 'the version is left as it was')
  })
}

t.test('a huge user_version that a release could still have written (a million) is a newer release\'s', async (t) => {
  const file = await fileAtVersion(t.testdir(), 1_000_000)
  await t.rejects(openStore(`sqlite:${file}`), {
    message: `SQLite file ${file}: schema version 1000000 was written by a newer plant-store (this one knows up to ${SQLITE_SCHEMA_VERSION}): ` +
      'run that release, or restore a backup taken before the upgrade'
  })
})
