/** Every acknowledged PUT survives a SIGKILL right after the last 200: the new names, at the ETags answered, after a restart. */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { pool } from '../../helpers/load.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { assertStopsCleanly, exitWithin, startServer } from '../../helpers/server-process.js'

const TOKEN = 'update-durability-token'
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
const TOTAL = 200
const CONCURRENCY = 16
// Past 2^53 and both signs: a rounded id would name another plant.
const idFor = (index: number) => String(index % 2 === 0 ? 9007199254740993n + BigInt(index) : -BigInt(index))

async function assertUpdatesSurviveSigkill (t: Test, databaseUrl: string) {
  const env = { DATABASE_URL: databaseUrl, API_TOKENS: TOKEN }
  const first = await startServer(t, env)
  const etags = new Map<number, string>()
  await pool(TOTAL, CONCURRENCY, async (index) => {
    const response = await fetch(`${first.url}/plants`, { method: 'POST', headers, body: `{"id":${idFor(index)},"name":"old ${index}","tag":"old"}` })
    await response.text()
    etags.set(index, response.headers.get('etag')!)
  })
  const failures: string[] = []
  const acknowledged = new Map<number, string>()
  let answered = 0
  await pool(TOTAL, CONCURRENCY, async (index) => {
    try {
      const response = await fetch(`${first.url}/plants/${idFor(index)}`, {
        method: 'PUT', headers: { ...headers, 'if-match': etags.get(index)! }, body: JSON.stringify({ name: `new ${index}`, ...(index % 3 === 0 && { tag: 'new' }) })
      })
      const text = await response.text()
      if (response.status === 200) acknowledged.set(index, response.headers.get('etag')!)
      else failures.push(`${idFor(index)}: ${response.status} ${text}`)
    } catch (error) {
      failures.push(`${idFor(index)}: ${(error as Error).message}`)
    }
    // The moment the last answer arrives: no time for anything to be written later.
    if (++answered === TOTAL) first.child.kill('SIGKILL')
  })
  t.same(await exitWithin(first, 10_000), { code: null, signal: 'SIGKILL' }, 'killed with SIGKILL')
  t.same(failures, [], 'every PUT was answered 200')

  const second = await startServer(t, env)
  const missing: string[] = []
  await pool(TOTAL, CONCURRENCY, async (index) => {
    const response = await fetch(`${second.url}/plants/${idFor(index)}`, { headers })
    const text = await response.text()
    const expected = JSON.stringify({ name: `new ${index}`, ...(index % 3 === 0 && { tag: 'new' }) })
    if (text !== expected || response.headers.get('etag') !== acknowledged.get(index)) missing.push(`${idFor(index)}: ${text} at ${response.headers.get('etag')}`)
  })
  t.same(missing, [], 'each acknowledged update reads back, at the ETag its 200 gave')
  const tagged = await fetch(`${second.url}/plants?tag=new&limit=1000`, { headers })
  t.equal((await tagged.json() as unknown[]).length, Math.ceil(TOTAL / 3), 'the tag index holds the new tags')
  second.child.kill('SIGTERM')
  assertStopsCleanly(t, second, await exitWithin(second, 10_000), 'the second server stops cleanly')
}

t.test('SQLite: every acknowledged PUT survives a SIGKILL right after the last 200', async (t) => {
  await assertUpdatesSurviveSigkill(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})

t.test('PostgreSQL: every acknowledged PUT survives a SIGKILL right after the last 200', { skip: await postgresSkip() }, async (t) => {
  await assertUpdatesSurviveSigkill(t, await freshDatabase(t))
})
