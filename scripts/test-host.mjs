// Installs plant-store into fresh host projects outside the repository, as a host developer
// would, and runs them: the packed tarball into examples/host at the lowest and the newest
// fastify 5 the peer range allows (type-check under strict NodeNext, then the host's tests), and
// into a bare PostgreSQL-only host whose install is measured. publint and arethetypeswrong check
// the tarball. `--routes` also installs from the repository folder and from a git URL.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix, resolve } from 'node:path'

const repo = resolve(import.meta.dirname, '..')
const work = mkdtempSync(join(tmpdir(), 'plant-store-hosts-'))
const keep = process.argv.includes('--keep')

function run (command, args, cwd, options = {}) {
  process.stdout.write(`\n$ (${cwd === repo ? 'repo' : cwd}) ${command} ${args.join(' ')}\n`)
  return execFileSync(command, args, { cwd, stdio: options.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8' })
}

const npmInstall = (cwd, specs) => run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs], cwd)

/** A new host project: a copy of examples/host without what a previous run left in it. */
function newHost (name) {
  const dir = join(work, name)
  cpSync(join(repo, 'examples/host'), dir, {
    recursive: true, filter: (source) => !/[/\\](node_modules|dist|package-lock\.json)$/.test(source)
  })
  return dir
}

function installedVersion (dir, name) {
  return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version
}

function testHost (name, installArgs) {
  const dir = newHost(name)
  npmInstall(dir, installArgs)
  run('npx', ['tsc', '-p', '.'], dir)
  run('node', ['--test', ...readdirSync(join(dir, 'dist/test')).filter((file) => file.endsWith('.test.js')).map((file) => `dist/test/${file}`)], dir)
  return installedVersion(dir, 'fastify')
}

/** A bare project with `specs` installed: its package paths, packages and megabytes. */
function bareInstall (name, specs) {
  const dir = join(work, name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }))
  npmInstall(dir, specs)
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules/.package-lock.json'), 'utf8'))
  const paths = Object.keys(lock.packages).filter((path) => path.startsWith('node_modules/'))
  const bytes = Number(run('du', ['-sb', 'node_modules'], dir, { capture: true }).split('\t')[0])
  return { dir, paths, packages: paths.length, megabytes: (bytes / 2 ** 20).toFixed(1) }
}

/** What a PostgreSQL-only host installs with plant-store, fastify and pg: no native build. */
function measurePostgresOnlyHost (tarball) {
  const host = bareInstall('postgres-only', [tarball, 'fastify@5', 'pg'])
  const native = host.paths.filter((path) => /better-sqlite3|node-gyp/.test(path))
  if (native.length > 0) throw new Error(`a PostgreSQL-only host installs ${native.join(', ')}`)
  return host
}

/** What a user of plant-store/client alone installs: no fastify, and the client loads. */
function measureClientOnlyUser (tarball) {
  const user = bareInstall('client-only', [tarball])
  const server = user.paths.filter((path) => /node_modules\/(fastify|pg|better-sqlite3)$/.test(path))
  if (server.length > 0) throw new Error(`a client-only user installs ${server.join(', ')}`)
  run('node', ['--input-type=module', '-e', "const { PlantStoreClient } = await import('plant-store/client'); new PlantStoreClient({ baseUrl: 'http://127.0.0.1:1', token: 't' })"], user.dir)
  return user
}

function packRepository () {
  const [{ filename, size, unpackedSize, entryCount, files }] = JSON.parse(
    run('npm', ['pack', '--json', '--pack-destination', work], repo, { capture: true }))
  return { tarball: join(work, filename), size, unpackedSize, entryCount, files: files.map(({ path }) => path) }
}

/**
 * The package ships exactly the modules its exports reach, following relative imports (static
 * and dynamic) through the built files: none missing, none that only the standalone server uses.
 */
function checkShippedModules (shipped) {
  const { exports } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'))
  const entries = Object.values(exports).flatMap((target) => typeof target === 'string' ? [] : [target.default])
  const reached = new Set()
  const pending = entries.map((entry) => posix.normalize(entry))
  while (pending.length > 0) {
    const file = pending.pop()
    if (reached.has(file)) continue
    reached.add(file)
    const code = readFileSync(join(repo, file), 'utf8')
    for (const [, specifier] of code.matchAll(/(?:from|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      pending.push(posix.join(posix.dirname(file), specifier))
    }
    // A module started by file name beside this one, in this one's own extension (a worker thread's).
    for (const [, name] of code.matchAll(/new URL\(`(\.{1,2}\/[\w./-]+)\$\{extension\}`/g)) {
      pending.push(posix.join(posix.dirname(file), `${name}.js`))
    }
  }
  const shippedModules = new Set(shipped.filter((path) => path.endsWith('.js')))
  const missing = [...reached].filter((path) => !shippedModules.has(path))
  // A module of types alone compiles to no code: its .js is shipped beside the .d.ts that needs it.
  const typesOnly = (path) => readFileSync(join(repo, path), 'utf8').replace(/\/\/.*$/gm, '').replace('export {};', '').trim() === ''
  const unused = [...shippedModules].filter((path) => !reached.has(path) && !typesOnly(path))
  if (missing.length + unused.length > 0) {
    throw new Error(`package.json files: missing ${missing.join(', ') || 'none'}; shipped but reached by no export: ${unused.join(', ') || 'none'}`)
  }
  return reached.size
}

const pack = packRepository()
const modules = checkShippedModules(pack.files)
run('npx', ['publint', '--strict', pack.tarball], repo)
run('npx', ['attw', pack.tarball, '--profile', 'esm-only'], repo)

// The lowest fastify the peer range names, and the newest 5.x, which also gets the SQLite driver
// (linked from this repository's build, so the host does not compile it again).
const low = testHost('fastify-lowest', [pack.tarball, 'fastify@5.0.0'])
const high = testHost('fastify-newest', [pack.tarball, 'fastify@5', join(repo, 'node_modules/better-sqlite3')])
const postgresOnly = measurePostgresOnlyHost(pack.tarball)
const clientOnly = measureClientOnlyUser(pack.tarball)

if (process.argv.includes('--routes')) {
  // Installs that build the package on the way: from a fresh clone's folder (copied in, as a
  // plain folder install would link it and load the folder's own fastify), and from a git URL.
  const clone = join(work, 'clone')
  run('git', ['clone', '--quiet', repo, clone], repo)
  testHost('from-folder', ['--install-links', clone, 'fastify@5'])
  testHost('from-git', [`git+file://${repo}#${run('git', ['rev-parse', 'HEAD'], repo, { capture: true }).trim()}`, 'fastify@5'])
}

process.stdout.write(`
host tests passed: fastify ${low} and ${high}
tarball: ${pack.entryCount} files (${modules} modules, each reached from an export), ${(pack.size / 1024).toFixed(1)} kB packed, ${(pack.unpackedSize / 1024).toFixed(1)} kB unpacked
a PostgreSQL-only host (plant-store, fastify, pg): ${postgresOnly.packages} packages, ${postgresOnly.megabytes} MB in node_modules
a user of plant-store/client alone: ${clientOnly.packages} packages, ${clientOnly.megabytes} MB in node_modules, no fastify
`)
if (!keep) rmSync(work, { recursive: true, force: true })
