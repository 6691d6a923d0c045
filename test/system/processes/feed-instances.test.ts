import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { assertExactlyOnce, follow, writePlants, type Follower } from '../../helpers/feed-follower.js'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { assertStopsCleanly, exitWithin, startServer } from '../../helpers/server-process.js'
import { eventually } from '../../helpers/webhooks.js'

const TOKEN = 'feed-instances-token'
const PLANTS = 200
// Of 200 plants: 200 creates, 100 updates, 67 deletes acknowledged; 50 second creates and 34 updates after a delete refused.
const ACKNOWLEDGED = 367
const REFUSED = 84

const pgSkip = await postgresSkip()

/**
 * Two instances on one store; on each a long-poll and a stream follower (the streams closed by the
 * client after 50 events or more and resumed with Last-Event-ID), while 200 plants' writes go to both.
 */
async function twoInstances (t: Test, databaseUrl: string) {
  const started = Date.now()
  const env = { DATABASE_URL: databaseUrl, API_TOKENS: TOKEN }
  // Started together, as a deployment's instances are (sqlite-concurrent-open.test.ts tests that alone).
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  const followers: Record<string, Follower> = {
    'long-poll on A': follow('poll', [a.url], TOKEN),
    'stream on A': follow('stream', [a.url], TOKEN, { dropEvery: 50 }),
    'long-poll on B': follow('poll', [b.url], TOKEN),
    'stream on B': follow('stream', [b.url], TOKEN, { dropEvery: 50 })
  }
  const writing = Date.now()
  const writes = await writePlants([a.url, b.url], TOKEN, PLANTS).done
  const wrote = Date.now() - writing
  const count = (outcome: string) => writes.filter((write) => write.outcome === outcome).length
  t.equal(count('acknowledged'), ACKNOWLEDGED, `${ACKNOWLEDGED} writes acknowledged, to both instances`)
  t.equal(count('refused'), REFUSED, `${REFUSED} writes refused (a second create, an update after the delete)`)
  t.ok(await eventually(() => Object.values(followers).every(({ changes }) => changes.length >= ACKNOWLEDGED), 20_000), 'every follower caught up')
  // Long enough for a duplicate or a refused write's event to arrive: the feed is read about once a second.
  await sleep(2000)
  for (const follower of Object.values(followers)) await follower.stop()
  for (const [name, { changes, resumes, refusals }] of Object.entries(followers)) {
    assertExactlyOnce(t, name, changes, writes)
    t.same(refusals, [], `${name}: every answer 200`)
    if (name.startsWith('stream')) t.ok(resumes >= 1, `${name}: resumed with Last-Event-ID ${resumes} times`)
  }
  t.comment(`${writes.length} writes in ${wrote} ms, ${ACKNOWLEDGED} events followed 4 times; ${Date.now() - started} ms in all`)
  for (const server of [a, b]) server.child.kill('SIGTERM')
  for (const server of [a, b]) assertStopsCleanly(t, server, await exitWithin(server, 15_000))
}

t.test('two instances on one PostgreSQL database: each follower sees every acknowledged write once, in order per plant', { skip: pgSkip }, async (t) => {
  await twoInstances(t, await freshDatabase(t))
})

t.test('two instances on one SQLite file: each follower sees every acknowledged write once, in order per plant', async (t) => {
  await twoInstances(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})
