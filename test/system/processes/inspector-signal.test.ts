/**
 * SIGUSR1 makes Node open its inspector on 127.0.0.1:9229, through which any local user could read
 * the process's memory and its tokens: the service hears it, and SIGUSR2, and only logs.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { send } from '../../helpers/load.js'
import { startServer } from '../../helpers/server-process.js'

const TOKEN = 'test-token-inspector-signal'

/** The TCP ports process `pid` listens on (Linux /proc). */
function listeningPorts (pid: number): number[] {
  const sockets = new Set(readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      return [/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]]
    } catch {
      return [] // closed meanwhile
    }
  }))
  return ['tcp', 'tcp6'].flatMap((table) => readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)
    .map((line) => line.trim().split(/\s+/))
    // local address, state 0A (LISTEN), inode
    .filter((fields) => fields[3] === '0A' && sockets.has(fields[9]))
    .map((fields) => parseInt(fields[1].split(':')[1], 16)))
}

t.test('SIGUSR1 and SIGUSR2 open no inspector and end nothing: one log line each', async (t) => {
  const server = await startServer(t, { API_TOKENS: TOKEN })
  const port = Number(new URL(server.url).port)
  const pid = server.child.pid!
  t.strictSame(listeningPorts(pid), [port], 'before: only the service port')
  for (const signal of ['SIGUSR1', 'SIGUSR2'] as const) {
    server.child.kill(signal)
    const logged = await server.waitForLog((line) => line.signal === signal, 3_000).then(() => true, () => false)
    await sleep(300) // the inspector, when it opens, listens at once
    t.strictSame(listeningPorts(pid), [port], `after ${signal}: still only the service port, no inspector on 9229`)
    t.notMatch(server.stderr(), /Debugger listening/, `after ${signal}: no debugger`)
    t.ok(logged, `${signal}: logged as ignored`)
    t.equal((await send(server.url, TOKEN, 'GET', '/healthz')).status, 200, `after ${signal}: the service still answers`)
  }
})
