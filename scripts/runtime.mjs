// `npm run runtime`: the folder an operator deploys. It holds the built service (dist/server.mjs
// and its chunks) and a package.json with a lockfile naming only the packages the service loads
// at run time, at the versions this checkout was tested with (a subset of package-lock.json).
// There, `npm ci --omit=dev` installs them without any build step of ours.
//   --out DIR          where (default: runtime/)
//   --stores LIST      which store drivers: sqlite,postgres (default both); memory: needs none
//   --tracing          with the OpenTelemetry packages, for OTEL_* to turn tracing on (default: without)
//   --node VERSION     the Node it will run on (default this one): better-sqlite3 is the newest major
//                      that runs there, and `engines` names the Node lines that major runs on
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { isBuildCurrent, ROOT } from './build-stamp.mjs'
import { DRIVERS, READS_ITS_FILES, START_COMMAND, TRACING, UNBUNDLED, UNLOCKED_DRIVERS } from './runtime-packages.mjs'

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'runtime' },
    stores: { type: 'string', default: Object.keys(DRIVERS).join(',') },
    node: { type: 'string', default: process.versions.node },
    tracing: { type: 'boolean', default: false }
  }
})
const stores = values.stores.split(',').filter(Boolean)
const unknown = stores.filter((store) => !(store in DRIVERS))
if (unknown.length > 0) {
  throw new Error(`--stores: unknown ${unknown.join(', ')}; choose among ${Object.keys(DRIVERS).join(', ')}`)
}
if (!isBuildCurrent()) throw new Error('dist/ is missing or older than the sources: run `npm run build` first')

const repoPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
const { driverMajorsOn } = await import(join(ROOT, 'dist/plugins/store/drivers.js'))

/**
 * The newest major of `driver` that runs on the target Node: the lockfile's, or one recorded in
 * UNLOCKED_DRIVERS, whose entries then replace the lockfile's. Also the Node lines of `engines`
 * that major runs on.
 */
function driverFor (driver) {
  const major = driverMajorsOn(driver, values.node).at(-1)
  if (major === undefined) throw new Error(`--node ${values.node}: no ${driver} major plant-store works with runs there`)
  const lines = repoPackage.engines.node.split('||').map((range) => range.trim())
    .filter((range) => driverMajorsOn(driver, range.replace(/^\D*/, '')).includes(major))
  const locked = Number(lock.packages[`node_modules/${driver}`].version.split('.')[0])
  if (major === locked) return { lines, entries: {} }
  const entries = UNLOCKED_DRIVERS[driver]?.[major]
  if (entries === undefined) throw new Error(`${driver} ${major} (for Node ${values.node}) is neither in package-lock.json nor in UNLOCKED_DRIVERS`)
  return { lines, entries }
}
const sqlite = stores.includes('sqlite') ? driverFor('better-sqlite3') : undefined
Object.assign(lock.packages, sqlite?.entries)
const engines = sqlite === undefined ? repoPackage.engines : { ...repoPackage.engines, node: sqlite.lines.join(' || ') }
const wanted = [...UNBUNDLED, ...READS_ITS_FILES, ...stores.map((store) => DRIVERS[store]), ...(values.tracing ? TRACING : [])]

/** Where Node finds `name` when required from the package at lock path `from` ('' for the root). */
function resolveInLock (name, from) {
  for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
    const path = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`
    if (lock.packages[path]) return path
    if (base === '') return undefined
  }
}

/**
 * Every lock entry the wanted packages reach through their dependencies (optional ones and
 * required peers included): the same paths, so each resolves to the same version as here.
 */
function reachedEntries () {
  const reached = new Map()
  const pending = wanted.map((name) => ({ name, from: '', optional: false }))
  while (pending.length > 0) {
    const { name, from, optional } = pending.pop()
    const path = resolveInLock(name, from)
    if (path === undefined) {
      if (optional) continue
      throw new Error(`package-lock.json has no ${name} for ${from || 'the root'}: run npm install`)
    }
    if (reached.has(path)) continue
    const entry = lock.packages[path]
    reached.set(path, entry)
    const optionalPeers = Object.entries(entry.peerDependenciesMeta ?? {}).filter(([, meta]) => meta.optional).map(([peer]) => peer)
    for (const dep of Object.keys(entry.dependencies ?? {})) pending.push({ name: dep, from: path, optional: false })
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) pending.push({ name: dep, from: path, optional: true })
    for (const dep of Object.keys(entry.peerDependencies ?? {})) {
      if (!optionalPeers.includes(dep)) pending.push({ name: dep, from: path, optional: false })
    }
  }
  return reached
}

const entries = reachedEntries()
const installs = (name) => [...entries.keys()].some((path) => path.endsWith(`node_modules/${name}`))
/** `{ overrides }` with the repository's overrides of packages installed here, or nothing. */
function overridesFor (installed) {
  const kept = Object.entries(repoPackage.overrides ?? {}).filter(([name]) => installed(name))
  return kept.length === 0 ? {} : { overrides: Object.fromEntries(kept) }
}
const dependencies = Object.fromEntries(wanted.map((name) => [name, entries.get(`node_modules/${name}`).version]).sort())
const runtimePackage = {
  name: `${repoPackage.name}-service`,
  version: repoPackage.version,
  description: 'The plant-store service, built: run `npm ci --omit=dev`, then `node server.mjs`',
  private: true,
  license: repoPackage.license,
  engines,
  scripts: { start: START_COMMAND.join(' ') },
  // better-sqlite3 builds its native addon on install: approved here, as in the repository.
  allowScripts: Object.fromEntries(Object.entries(repoPackage.allowScripts).filter(([name]) => installs(name))),
  // The repository's overrides (dependencies pinned to versions that run on every Node line it
  // supports) for the packages here: the lockfile cut below has their versions, npm ci needs both.
  ...overridesFor(installs),
  dependencies
}
const runtimeLock = {
  name: runtimePackage.name,
  version: runtimePackage.version,
  lockfileVersion: lock.lockfileVersion,
  requires: true,
  packages: {
    '': { name: runtimePackage.name, version: runtimePackage.version, license: runtimePackage.license, dependencies, engines: runtimePackage.engines },
    ...Object.fromEntries([...entries].sort(([a], [b]) => a.localeCompare(b)).map(([path, entry]) => {
      // Here nothing is a devDependency or a peer: drop the flags npm set in the full tree.
      const { dev, devOptional, peer, ...kept } = entry
      return [path, kept]
    }))
  }
}

const out = resolve(ROOT, values.out)
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
cpSync(join(ROOT, 'dist/server.mjs'), join(out, 'server.mjs'))
// The webhook delivery thread's modules (the second with tracing on), started by file name beside server.mjs.
cpSync(join(ROOT, 'dist/webhook-delivery.mjs'), join(out, 'webhook-delivery.mjs'))
cpSync(join(ROOT, 'dist/webhook-delivery-traced.mjs'), join(out, 'webhook-delivery-traced.mjs'))
cpSync(join(ROOT, 'dist/chunks'), join(out, 'chunks'), { recursive: true })
writeFileSync(join(out, 'package.json'), `${JSON.stringify(runtimePackage, null, 2)}\n`)
writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(runtimeLock, null, 2)}\n`)
const driverNote = sqlite === undefined ? '' : ` (better-sqlite3 ${dependencies['better-sqlite3']}: Node ${engines.node})`
process.stdout.write(`${out}: the service for ${stores.join(' and ') || 'the memory store only'}${driverNote}${values.tracing ? ', with tracing' : ''}, ${entries.size} packages to install with npm ci --omit=dev\n`)
