import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { checkDriver, checkDrivers, DRIVER_MAJORS, peerRange } from '../../plugins/store/drivers.js'
import plantStore from '../../src/plugin.js'
import { StoreOpenError } from '../../plugins/store/index.js'
import packageJson from '../../package.json' with { type: 'json' }
import { TOKEN } from '../helpers/plugin-app.js'

const REAL = join(import.meta.dirname, '..', '..', 'node_modules')

/** A folder whose node_modules holds `packages`; returns a file in it to resolve from. */
function project (t: Test, packages: Record<string, (dir: string) => void>) {
  const root = t.testdir({})
  for (const [name, make] of Object.entries(packages)) {
    const dir = join(root, 'node_modules', name)
    mkdirSync(dir, { recursive: true })
    make(dir)
  }
  return join(root, 'index.js')
}
const manifest = (fields: object) => (dir: string) => writeFileSync(join(dir, 'package.json'), JSON.stringify(fields))

t.test('the driver majors checked are the peerDependencies the package declares', async (t) => {
  for (const driver of Object.keys(DRIVER_MAJORS) as Array<keyof typeof DRIVER_MAJORS>) {
    t.equal(packageJson.peerDependencies[driver], peerRange(driver), driver)
  }
})

// Reported: under pnpm better-sqlite3 13 installed on Node 20, and the first open segfaulted (exit 139).
t.test('another major of a driver is refused before it is loaded, with one line saying what to install', async (t) => {
  const from = project(t, {
    'better-sqlite3': manifest({ name: 'better-sqlite3', version: '13.1.1', engines: { node: '>=22' }, main: 'crash.js' }),
    pg: manifest({ name: 'pg', version: '9.0.0' })
  })
  const error = t.throws(() => checkDriver('better-sqlite3', from, '20.20.2')) as Error
  t.type(error, StoreOpenError)
  t.match(error.message, /^better-sqlite3 13\.1\.1 is installed \(.*\/node_modules\/better-sqlite3; it needs Node 22 or later: on Node 20 it crashes at the first open\) but plant-store works with better-sqlite3 12 on Node 20\.20\.2: npm install better-sqlite3@12$/)
  t.throws(() => checkDrivers('postgres://db/plants', from), /^pg 9\.0\.0 is installed \([^)]*\) but plant-store works with pg 8: npm install pg@8$/)
})

// Reported: a native build that was skipped gave "Could not locate the bindings file" at the first open.
t.test('a driver whose native build is missing is refused at registration, with one line', async (t) => {
  const from = project(t, {
    // The real package, without the build its install script would have made.
    'better-sqlite3': (dir) => cpSync(join(REAL, 'better-sqlite3'), dir, { recursive: true, filter: (source) => !/[/\\](build|deps|src)$/.test(source) }),
    bindings: (dir) => cpSync(join(REAL, 'bindings'), dir, { recursive: true }),
    'file-uri-to-path': (dir) => cpSync(join(REAL, 'file-uri-to-path'), dir, { recursive: true })
  })
  const error = t.throws(() => checkDrivers('sqlite:./plants.db', from)) as Error
  t.match(error.message, /^better-sqlite3 12\.\d+\.\d+ cannot be loaded \(Could not locate the bindings file\. Tried:\): its native build is missing or was made for another Node; rebuild it with npm rebuild better-sqlite3/)
  t.notMatch(error.message, /\n/, 'one line')
})

t.test('a driver that loads, or none installed, or no driver needed: nothing to refuse', async (t) => {
  t.equal(checkDrivers('sqlite:./plants.db'), undefined, 'the real better-sqlite3')
  t.equal(checkDrivers('postgres://db/plants'), undefined, 'the real pg')
  t.equal(checkDrivers('memory:'), undefined)
  // Outside the repository, whose own node_modules would be found.
  const elsewhere = mkdtempSync(join(tmpdir(), 'no-drivers-'))
  t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }))
  t.equal(checkDrivers('sqlite:./plants.db', join(elsewhere, 'index.js')), undefined, 'not installed: the store\'s loader says so')
})

t.test('the plugin checks the driver of a store URL at registration', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  const dir = t.testdir({})
  await host.register(plantStore, { tokens: [TOKEN], store: `sqlite:${join(dir, 'plants.db')}` })
  await host.ready()
  t.equal((await host.inject({ url: '/readyz' })).statusCode, 200)
})
