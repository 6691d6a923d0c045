import { join } from 'node:path'
import t from 'tap'
import { exitWithin, startServer } from './helpers/server-process.js'

const TOKEN = 'durability-token'
const TOTAL = 300
const CONCURRENCY = 16
const headers = { authorization: `Bearer ${TOKEN}` }

const INT64_MIN = -9223372036854775808n
const INT64_MAX = 9223372036854775807n

/** Distinct ids: small ones, ones past 2^53 (a double would round them), and both ends of int64. */
function idFor (index: number): string {
  if (index === TOTAL - 1) return String(INT64_MAX)
  switch (index % 3) {
    case 0: return String(index + 1)
    case 1: return String(9007199254740993n + BigInt(index))
    default: return String(INT64_MIN + BigInt(index))
  }
}

interface Expected { name: string, tag?: string }

function plantFor (index: number): Expected {
  const id = idFor(index)
  return index % 4 === 0 ? { name: `plant ${id}`, tag: `tag ${index}` } : { name: `plant ${id}` }
}

/** Runs `task` over 0..count-1 with at most `concurrency` at a time. */
async function pool (count: number, concurrency: number, task: (index: number) => Promise<void>) {
  let next = 0
  const worker = async () => {
    while (next < count) await task(next++)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

t.test('every acknowledged create survives a SIGKILL right after the last 200', async (t) => {
  const file = join(t.testdir({}), 'plants.db')
  const env = { DATABASE_URL: `sqlite:${file}`, API_TOKENS: TOKEN }
  const first = await startServer(t, env)

  const acknowledged: number[] = []
  const failures: string[] = []
  let answered = 0
  await pool(TOTAL, CONCURRENCY, async (index) => {
    const id = idFor(index)
    // Raw JSON text: the id stays exactly as written, however large.
    const { name, tag } = plantFor(index)
    const body = `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`
    try {
      const response = await fetch(`${first.url}/plants`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body
      })
      const text = await response.text()
      if (response.status === 200) acknowledged.push(index)
      else failures.push(`${id}: ${response.status} ${text}`)
    } catch (error) {
      failures.push(`${id}: ${(error as Error).message}`)
    }
    // The moment the last answer arrives: no time for anything to be written later.
    if (++answered === TOTAL) first.child.kill('SIGKILL')
  })

  const exit = await exitWithin(first, 10_000)
  t.same(exit, { code: null, signal: 'SIGKILL' }, 'the first server was killed with SIGKILL')
  t.same(failures, [], 'every create was answered 200')
  t.equal(acknowledged.length, TOTAL, `${TOTAL} creates acknowledged`)

  const second = await startServer(t, env)
  const missing: string[] = []
  let found = 0
  await pool(acknowledged.length, CONCURRENCY, async (position) => {
    const index = acknowledged[position]
    const id = idFor(index)
    try {
      const response = await fetch(`${second.url}/plants/${id}`, { headers })
      const text = await response.text()
      if (response.status === 200 && JSON.stringify(JSON.parse(text)) === JSON.stringify(plantFor(index))) found++
      else missing.push(`${id}: ${response.status} ${text}`)
    } catch (error) {
      missing.push(`${id}: ${(error as Error).message}`)
    }
  })

  t.comment(`plants acknowledged: ${acknowledged.length}, plants found after SIGKILL and restart: ${found}`)
  t.same(missing, [], 'each acknowledged plant reads back with its name and tag')
  t.equal(found, acknowledged.length, 'acknowledged == found')

  // The listing gives the ids back exactly, as JSON integers: read them from the raw text.
  const list = await fetch(`${second.url}/plants?limit=1000`, { headers })
  t.equal(list.status, 200)
  const listed = [...(await list.text()).matchAll(/"id":(-?\d+)[,}]/g)].map(([, id]) => id)
  const expected = acknowledged.map(idFor).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0))
  t.same(listed, expected, 'the listing holds exactly the acknowledged ids, in ascending order, unrounded')

  second.child.kill('SIGTERM')
  t.same(await exitWithin(second, 10_000), { code: 0, signal: null }, 'the second server stops cleanly')
})
