import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { assertExactlyOnce, follow, writePlants, type Follower } from '../../helpers/feed-follower.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { assertStopsCleanly, exitWithin, startServer } from '../../helpers/server-process.js'
import { eventually } from '../../helpers/webhooks.js'

const TOKEN = 'feed-kill-token'
const PLANTS = 300
// A is killed once this many writes were acknowledged: mid-run, some 550 writes acknowledged in all.
const KILL_AT = 150
const FOLLOWED_AT = 20

const pgSkip = await postgresSkip()

/**
 * Two instances on one store, writes to both; instance A kill -9'd mid-run, the writes then going
 * to B alone. The followers of A move on to B from their last cursor; B's see A's writes.
 */
async function killOne (t: Test, databaseUrl: string) {
  const env = { DATABASE_URL: databaseUrl, API_TOKENS: TOKEN }
  // Started together, as a deployment's instances are (sqlite-concurrent-open.test.ts tests that alone).
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  // A first request to each before the followers start: a fresh process's first answers are slow on a loaded machine.
  for (const server of [a, b]) await (await fetch(`${server.url}/plants/changes?after=now`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  const followers: Record<string, Follower> = {
    'long-poll on A, then B': follow('poll', [a.url, b.url], TOKEN),
    'stream on A, then B': follow('stream', [a.url, b.url], TOKEN),
    'long-poll on B': follow('poll', [b.url], TOKEN),
    'stream on B': follow('stream', [b.url], TOKEN)
  }
  const { writes, done } = writePlants([a.url, b.url], TOKEN, PLANTS)
  const running = { writes: true }
  done.then(() => { running.writes = false }, () => {})
  const acknowledgedBy = (url: string) => writes.filter((write) => write.outcome === 'acknowledged' && write.url === url).length
  // Mid-run and mid-stream: the writes half done, A's followers following A.
  const followingA = [followers['long-poll on A, then B'], followers['stream on A, then B']]
  t.ok(await eventually(() => writes.filter(({ outcome }) => outcome === 'acknowledged').length >= KILL_AT &&
    followingA.every(({ changes }) => changes.length >= FOLLOWED_AT), 30_000), `${KILL_AT} writes acknowledged, A's followers at ${FOLLOWED_AT} changes`)
  t.ok(running.writes, 'the writes still running at the kill')
  a.child.kill('SIGKILL')
  t.comment(`at the kill: ${Object.entries(followers).map(([name, { changes }]) => `${name} ${changes.length}`).join(', ')} changes`)
  t.same(await exitWithin(a, 10_000), { code: null, signal: 'SIGKILL' }, 'A killed with -9')
  await done
  const count = (outcome: string) => writes.filter((write) => write.outcome === outcome).length
  const acknowledged = count('acknowledged')
  const ackedByA = acknowledgedBy(a.url)
  // B's followers hold them all (below): what A acknowledged before it died is in the feed.
  t.ok(ackedByA > 0, `A acknowledged ${ackedByA} writes before the kill`)
  t.ok(acknowledgedBy(b.url) > acknowledged / 2, `B acknowledged the others (${acknowledgedBy(b.url)})`)
  t.ok(await eventually(() => Object.values(followers).every(({ changes }) => changes.length >= acknowledged), 20_000), 'every follower caught up')
  await sleep(2000)
  for (const follower of Object.values(followers)) await follower.stop()
  const seenFromA: number[] = []
  for (const [name, { changes, from, resumes }] of Object.entries(followers)) {
    assertExactlyOnce(t, name, changes, writes)
    if (!name.endsWith('then B')) continue
    // A's changes until the kill, then B's from the last cursor: exactly once (above) across the move.
    const fromA = from.findIndex((url) => url !== a.url)
    seenFromA.push(fromA)
    t.ok(fromA > 0 && from.slice(fromA).every((url) => url === b.url),
      `${name}: ${fromA} changes from A until the kill, then ${from.length - fromA} from B (${resumes} resumes)`)
  }
  t.comment(`${writes.length} writes: ${acknowledged} acknowledged (${ackedByA} by A), ${count('refused')} refused, ` +
    `${count('unknown')} unanswered by the kill (at most once in the feed); A's followers had ${seenFromA.join(' and ')} changes from A`)
  b.child.kill('SIGTERM')
  // A connection accepted during its shutdown (a follower moving on) once held B past SHUTDOWN_TIMEOUT.
  assertStopsCleanly(t, b, await exitWithin(b, 15_000))
}

t.test('PostgreSQL: one of two instances killed with -9 mid-run: every follower still ends with each acknowledged write once', { skip: pgSkip }, async (t) => {
  await killOne(t, await freshDatabase(t))
})

t.test('SQLite: one of two instances on one file killed with -9 mid-run: every follower still ends with each acknowledged write once', async (t) => {
  await killOne(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})
