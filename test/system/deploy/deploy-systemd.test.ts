import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const UNIT = fileURLToPath(new URL('../../../deploy/plant-store.service', import.meta.url))
const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0

t.test('the systemd unit passes systemd-analyze verify', { skip: hasAnalyze ? false : 'systemd-analyze is not installed (apt-get install systemd)' }, async (t) => {
  const result = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' })
  t.equal(result.status, 0, result.stderr)
  t.equal(result.stderr.trim(), '', 'no complaint')
})

t.test('the unit waits longer than SHUTDOWN_TIMEOUT before SIGKILL', async (t) => {
  const text = readFileSync(UNIT, 'utf8')
  const timeout = Number(/SHUTDOWN_TIMEOUT=(\d+)/.exec(text)![1])
  const stopSec = Number(/^TimeoutStopSec=(\d+)$/m.exec(text)![1])
  t.ok(stopSec * 1000 > timeout, `${stopSec} s > ${timeout} ms`)
})
