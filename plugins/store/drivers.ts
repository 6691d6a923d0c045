import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { StoreOpenError } from './store-url.js'

interface DriverMajor {
  major: number
  /** The Node majors it runs on, when not every one plant-store runs on, and why not the others. */
  node?: { from?: number, below?: number, why: string }
}

/**
 * The driver majors plant-store works with, and the Node lines each of them runs on; the package's
 * peerDependencies name the same majors (a test checks).
 */
export const DRIVER_MAJORS = {
  'better-sqlite3': [
    // Built against Node 24's headers, 12's objects remove a cleanup hook when the garbage
    // collector frees them, and abort the process when that happens outside JavaScript.
    { major: 12, node: { below: 24, why: 'built for Node 24 or later it aborts the process when the garbage collector frees its objects' } },
    { major: 13, node: { from: 22, why: 'it needs Node 22 or later: on Node 20 it crashes at the first open' } }
  ],
  pg: [{ major: 8 }]
} as const satisfies Record<string, readonly DriverMajor[]>

type Driver = keyof typeof DRIVER_MAJORS

interface DriverPackage { version: string, engines?: { node?: string } }

const firstLine = (message: string) => message.split('\n', 1)[0].slice(0, 200)

const runsOn = ({ node }: DriverMajor, nodeMajor: number) =>
  node === undefined || (nodeMajor >= (node.from ?? 0) && nodeMajor < (node.below ?? Infinity))

/** The majors of `driver` that plant-store works with on Node `nodeVersion`, oldest first. */
export function driverMajorsOn (driver: Driver, nodeVersion: string): number[] {
  const nodeMajor = Number(nodeVersion.split('.')[0])
  return DRIVER_MAJORS[driver].filter((entry) => runsOn(entry, nodeMajor)).map(({ major }) => major)
}

/** The peerDependencies range for `driver`: every major it works with, on some Node. */
export const peerRange = (driver: Driver) => DRIVER_MAJORS[driver].map(({ major }) => `^${major}.0.0`).join(' || ')

/**
 * Refuses a driver that would fail later, and worse: a major plant-store is not built for, or one
 * that crashes on this Node (better-sqlite3 13 on Node 20 passes npm's checks, then kills the
 * process with a segfault at the first open; 12 on Node 24 aborts it later), or a native build
 * that is missing (an install whose scripts were skipped) or built for another Node. A driver that
 * is not installed at all is left to the store's loader, which says so. `from` is where the
 * driver is resolved, as the store would.
 */
export function checkDriver (driver: Driver, from: string | URL = import.meta.url, nodeVersion = process.versions.node) {
  const require = createRequire(from)
  let file: string
  try {
    file = require.resolve(`${driver}/package.json`)
  } catch {
    return
  }
  const { version, engines } = JSON.parse(readFileSync(file, 'utf8')) as DriverPackage
  const majors = driverMajorsOn(driver, nodeVersion)
  const installed = Number(version.split('.')[0])
  if (!majors.includes(installed)) {
    const known: DriverMajor | undefined = DRIVER_MAJORS[driver].find(({ major }) => major === installed)
    const why = known?.node !== undefined
      ? `; ${known.node.why}`
      : engines?.node === undefined ? '' : `, which needs Node ${engines.node}; this is Node ${nodeVersion}`
    // Named with the Node version only where the choice depends on it.
    const where = majors.length === DRIVER_MAJORS[driver].length ? '' : ` on Node ${nodeVersion}`
    throw new StoreOpenError(`${driver} ${version} is installed (${file.slice(0, -'/package.json'.length)}${why}) but plant-store works with ${driver} ${majors.join(' or ')}${where}: npm install ${driver}@${majors.at(-1)}`)
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
