import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { checkDriver, checkDrivers, driverMajorsOn, peerRange } from '../../plugins/store/drivers.js'
import { StoreOpenError } from '../../plugins/store/index.js'
import packageJson from '../../package.json' with { type: 'json' }

/**
 * A folder with a fake driver of `version` in node_modules, whose module throws when loaded (so a
 * driver that is let through says so); returns a file in the folder to resolve from.
 */
function fakeDriver (t: Test, name: string, version: string, engines?: object) {
  const root = t.testdir({})
  const dir = join(root, 'node_modules', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version, engines, main: 'index.js' }))
  writeFileSync(join(dir, 'index.js'), 'throw new Error("loaded")')
  return join(root, 'index.js')
}

t.test('the peer ranges name every driver major plant-store works with, on some Node', async (t) => {
  t.equal(peerRange('better-sqlite3'), '^12.0.0 || ^13.0.0')
  t.equal(packageJson.peerDependencies['better-sqlite3'], peerRange('better-sqlite3'))
  t.equal(packageJson.peerDependencies.pg, peerRange('pg'))
})

t.test('which better-sqlite3 majors each Node line runs: 12 up to 22, 13 from 22', async (t) => {
  t.strictSame(driverMajorsOn('better-sqlite3', '20.20.2'), [12])
  t.strictSame(driverMajorsOn('better-sqlite3', '22.23.3'), [12, 13])
  t.strictSame(driverMajorsOn('better-sqlite3', '24.21.0'), [13])
  t.strictSame(driverMajorsOn('pg', '24.21.0'), [8])
})

// Built for Node 24, better-sqlite3 12 aborts the process (exit 134, "Assertion failed: (env) !=
// nullptr") when the garbage collector frees one of its closed databases or statements outside
// JavaScript: at exit, or at any time. Loading it is not the problem, so it is refused unloaded.
t.test('better-sqlite3 12 on Node 24 is refused before it is loaded, naming the major to install', async (t) => {
  const from = fakeDriver(t, 'better-sqlite3', '12.11.1', { node: '20.x || 22.x || 23.x || 24.x || 25.x || 26.x' })
  const error = t.throws(() => checkDriver('better-sqlite3', from, '24.21.0')) as Error
  t.type(error, StoreOpenError)
  t.match(error.message, /^better-sqlite3 12\.11\.1 is installed \(\/.*\/node_modules\/better-sqlite3; built for Node 24 or later it aborts the process when the garbage collector frees its objects\) but plant-store works with better-sqlite3 13 on Node 24\.21\.0: npm install better-sqlite3@13$/)
})

t.test('better-sqlite3 13 on Node 20 is refused before it is loaded (it would crash at the first open)', async (t) => {
  const from = fakeDriver(t, 'better-sqlite3', '13.2.0', { node: '>=22' })
  const error = t.throws(() => checkDriver('better-sqlite3', from, '20.20.2')) as Error
  t.match(error.message, /^better-sqlite3 13\.2\.0 is installed \(\/.*\/node_modules\/better-sqlite3; it needs Node 22 or later: on Node 20 it crashes at the first open\) but plant-store works with better-sqlite3 12 on Node 20\.20\.2: npm install better-sqlite3@12$/)
})

t.test('on Node 22 both majors pass the check and are loaded; an unknown major is refused with the choice', async (t) => {
  for (const version of ['12.11.1', '13.2.0']) {
    t.throws(() => checkDriver('better-sqlite3', fakeDriver(t, 'better-sqlite3', version), '22.23.3'), /^better-sqlite3 \d+\.\d+\.\d+ cannot be loaded \(loaded\)/, version)
  }
  t.throws(() => checkDriver('better-sqlite3', fakeDriver(t, 'better-sqlite3', '14.0.0', { node: '>=24' }), '22.23.3'),
    /^better-sqlite3 14\.0\.0 is installed \(.*\/node_modules\/better-sqlite3, which needs Node >=24; this is Node 22\.23\.3\) but plant-store works with better-sqlite3 12 or 13: npm install better-sqlite3@13$/)
  t.throws(() => checkDriver('pg', fakeDriver(t, 'pg', '9.0.0'), '24.21.0'), /^pg 9\.0\.0 is installed \([^)]*\) but plant-store works with pg 8: npm install pg@8$/)
})

t.test('the driver installed here runs on this Node', async (t) => {
  t.ok(driverMajorsOn('better-sqlite3', process.versions.node).length > 0, `Node ${process.versions.node} has a better-sqlite3 major`)
  t.equal(checkDrivers('sqlite:./plants.db'), undefined)
  t.equal(checkDrivers('postgres://db/plants'), undefined)
})
