import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { StoreOpenError } from '../stores/index.js'

/** The driver majors plant-store works with: its peerDependencies say the same (a test checks). */
export const DRIVER_MAJORS = { 'better-sqlite3': 12, pg: 8 } as const

type Driver = keyof typeof DRIVER_MAJORS

interface DriverPackage { version: string, engines?: { node?: string } }

const firstLine = (message: string) => message.split('\n', 1)[0].slice(0, 200)

/**
 * Refuses a driver that would fail later, and worse: another major than the one plant-store is
 * built for (better-sqlite3 13 installed on Node 20 passes npm's checks, then kills the process
 * with a segfault at the first open), or a native build that is missing (an install whose scripts
 * were skipped) or built for another Node. A driver that is not installed at all is left to the
 * store's loader, which says so. `from` is where the driver is resolved, as the store would.
 */
export function checkDriver (driver: Driver, from: string | URL = import.meta.url) {
  const require = createRequire(from)
  let file: string
  try {
    file = require.resolve(`${driver}/package.json`)
  } catch {
    return
  }
  const { version, engines } = JSON.parse(readFileSync(file, 'utf8')) as DriverPackage
  const major = DRIVER_MAJORS[driver]
  if (Number(version.split('.')[0]) !== major) {
    const needs = engines?.node === undefined ? '' : `, which needs Node ${engines.node}; this is Node ${process.versions.node}`
    throw new StoreOpenError(`${driver} ${version} is installed (${file.slice(0, -'/package.json'.length)}${needs}) but plant-store works with ${driver} ${major}: npm install ${driver}@${major}`)
  }
  if (driver !== 'better-sqlite3') return
  try {
    // Its native part loads at the first open, not at import: open a database in memory.
    const Database = require(driver) as new (path: string) => { close: () => void }
    new Database(':memory:').close()
  } catch (cause) {
    throw new StoreOpenError(`${driver} ${version} cannot be loaded (${firstLine((cause as Error).message)}): its native build is missing or was made for another Node; rebuild it with npm rebuild ${driver} (with its install script allowed)`, { cause })
  }
}

/** Checks the driver the store URL needs, if any. */
export function checkDrivers (url: string, from?: string | URL) {
  if (url.startsWith('sqlite:')) checkDriver('better-sqlite3', from)
  else if (/^postgres(ql)?:\/\//.test(url)) checkDriver('pg', from)
}
