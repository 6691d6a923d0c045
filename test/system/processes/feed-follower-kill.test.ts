import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { assertExactlyOnce, FOLLOWER_ENTRY, persistedChanges, writePlants, type Write } from '../../helpers/feed-follower.js'
import { assertStopsCleanly, exitWithin, NODE_ARGS, serverEnv, startServer } from '../../helpers/server-process.js'
import { eventually } from '../../helpers/webhooks.js'

const TOKEN = 'feed-follower-kill-token'
const KILLS = 2
// Each kill comes once the follower has written this many more changes since it (re)started.
const CHANGES_BEFORE_KILL = 60
const BATCH = 40

for (const kind of ['stream', 'poll'] as const) {
  t.test(`a ${kind === 'poll' ? 'long-poll' : 'stream'} follower killed with -9 twice mid-stream resumes from the cursor it saved: every change once`, async (t) => {
    const started = Date.now()
    const dir = t.testdir({})
    const file = join(dir, 'follower.jsonl')
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'plants.db')}`, API_TOKENS: TOKEN })
    // The follower: a child that follows the feed and appends each change to `file` as it takes it.
    const startFollower = async () => {
      const child = spawn(process.execPath, [...NODE_ARGS, FOLLOWER_ENTRY, kind, server.url, TOKEN, file], { env: serverEnv(), stdio: ['ignore', 'pipe', 'inherit'] })
      t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
      const [line] = await once(child.stdout, 'data') as [Buffer]
      return { child, line: line.toString().trim() }
    }
    let follower = await startFollower()
    t.equal(follower.line, 'following after the oldest', 'the first start follows from the oldest event kept')

    const state = { killing: true }
    const saved: string[] = []
    const killing = (async () => {
      for (let kill = 1; kill <= KILLS; kill++) {
        const before = persistedChanges(file).length
        if (!await eventually(() => persistedChanges(file).length >= before + CHANGES_BEFORE_KILL, 30_000)) break
        follower.child.kill('SIGKILL')
        await once(follower.child, 'close')
        const kept = persistedChanges(file)
        saved.push(`${kept.length}`)
        follower = await startFollower()
        t.equal(follower.line, `following after ${kept.at(-1)!.cursor}`, `kill ${kill} after ${kept.length} changes saved: restarted after the last one saved`)
      }
      state.killing = false
    })()
    // Writes in batches of 40 plants (some 75 changes each) for as long as the kills go on: each comes mid-stream.
    const writes: Write[] = []
    for (let batch = 0; state.killing; batch++) writes.push(...await writePlants([server.url], TOKEN, BATCH, { first: batch * BATCH }).done)
    await killing
    t.equal(saved.length, KILLS, `${KILLS} kills mid-stream`)
    const acknowledged = writes.filter(({ outcome }) => outcome === 'acknowledged').length
    t.ok(await eventually(() => persistedChanges(file).length >= acknowledged, 20_000), 'the follower caught up')
    await sleep(2000)
    follower.child.kill('SIGKILL')
    const changes = persistedChanges(file)
    assertExactlyOnce(t, 'the follower\'s saved changes', changes, writes)
    t.comment(`${writes.length} writes (${acknowledged} acknowledged), ${changes.length} changes saved, ` +
      `kills after ${saved.join(', ')} changes; ${Date.now() - started} ms in all`)
    server.child.kill('SIGTERM')
    assertStopsCleanly(t, server, await exitWithin(server, 15_000), 'the server stops cleanly')
  })
}
