import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const { engines } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
/** The version `engines` names for a Node line, e.g. 24 -> 24.21.0. */
const line = (major: number) => new RegExp(`\\^(${major}\\.\\d+\\.\\d+)`).exec(engines.node)![1]

interface LockEntry { version: string }

/** The runtime folder `scripts/runtime.mjs` makes with `args`: its package.json and lockfile packages. */
function runtimeFolder (dir: string, args: string[]) {
  execFileSync(process.execPath, [join(ROOT, 'scripts/runtime.mjs'), '--out', dir, ...args], { cwd: ROOT, stdio: 'pipe' })
  const packageJson = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { engines: { node: string }, dependencies: Record<string, string> }
  const { packages } = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  return { packageJson, packages }
}

t.test('a runtime folder made for Node 24 installs better-sqlite3 13, the major that runs there, and says which Node lines it runs on', async (t) => {
  const { packageJson, packages } = runtimeFolder(t.testdir({}), ['--stores', 'sqlite', '--node', line(24)])
  t.match(packageJson.dependencies['better-sqlite3'], /^13\./)
  t.equal(packages['node_modules/better-sqlite3'].version, packageJson.dependencies['better-sqlite3'], 'its lockfile agrees')
  t.ok(packages['node_modules/node-addon-api'], 'with its dependency')
  t.notOk(packages['node_modules/prebuild-install'], 'and nothing of 12\'s install')
  t.equal(packageJson.engines.node, `^${line(22)} || ^${line(24)}`, 'not Node 20, where 13 crashes')
})

t.test('a runtime folder made for Node 20 keeps the locked better-sqlite3 12', async (t) => {
  const { packageJson, packages } = runtimeFolder(t.testdir({}), ['--stores', 'sqlite', '--node', line(20)])
  const locked = (JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> })
    .packages['node_modules/better-sqlite3'].version
  t.equal(packageJson.dependencies['better-sqlite3'], locked)
  t.match(locked, /^12\./)
  t.ok(packages['node_modules/prebuild-install'], '12 as locked, with its install')
  t.equal(packageJson.engines.node, `^${line(20)} || ^${line(22)}`, 'not Node 24, where 12 aborts')
})

t.test('a runtime folder for PostgreSQL alone runs on every Node line engines names', async (t) => {
  const { packageJson } = runtimeFolder(t.testdir({}), ['--stores', 'postgres', '--node', line(24)])
  t.equal(packageJson.engines.node, engines.node)
  t.notOk(packageJson.dependencies['better-sqlite3'])
})
