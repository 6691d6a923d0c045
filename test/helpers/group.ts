import { readdirSync } from 'node:fs'
import t from 'tap'
// Before any file builds an app: its apps share their compiled serializers.
import './shared-serializers.js'

type Root = { test: (...args: unknown[]) => Promise<unknown>, jobs: number }

/**
 * Runs test files one after another in this one process, each as if it were run alone.
 *
 * Most of a test process's CPU is not its tests: it is tap's coverage hooks and the app's
 * ~650 modules loaded through them, some 3 s of CPU a file on these machines. One process per
 * group pays that once. Each file still runs alone with `npx tap <file>`.
 *
 * A file's top-level `t.test(...)` calls are its subtests on tap's root: they are noted as the
 * file is imported, named after the file, and awaited before the next file is imported; a file's
 * `t.jobs` and the environment are put back after it. So files never overlap or change each
 * other's settings.
 */
async function runFiles (folder: URL, names: readonly string[]) {
  const root = t as unknown as Root
  // tap ends its root once the loop is empty, which a pending import does not prevent: the loop
  // is held until the last file has run.
  const holdLoop = setInterval(() => {}, 60_000)
  try {
    for (const name of names) await runFile(root, new URL(name, folder))
  } finally {
    clearInterval(holdLoop)
  }
}

async function runFile (root: Root, file: URL) {
  const label = file.pathname.slice(file.pathname.lastIndexOf('/test/') + 1)
  const test = root.test
  const env = { ...process.env }
  const subtests: Promise<unknown>[] = []
  let queued!: () => void
  const firstQueued = new Promise<void>((resolve) => { queued = resolve })
  root.test = function (this: unknown, ...args: unknown[]) {
    if (typeof args[0] === 'string') args[0] = `${label}: ${args[0]}`
    const subtest = test.apply(this, args)
    subtests.push(subtest)
    queued()
    return subtest
  }
  // Once a file has used t.teardown, tap ends its root as soon as the root is idle: while the
  // next file loads, a subtest keeps it busy until that file has queued its first test.
  const importing = import(file.href)
  try {
    await test.call(root, `${label} loads`, async () => { await Promise.race([firstQueued, importing]) })
    await importing
  } finally {
    root.test = test
  }
  if (subtests.length === 0) throw new Error(`${label} added no subtests that this group could see`)
  await Promise.all(subtests)
  root.jobs = 1
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name]
  Object.assign(process.env, env)
}

/**
 * Runs a tier's test files (`test/<tier>/*.test.ts`, by name) as one group; with `part`, every
 * `of`-th of them from the `part`-th on (1-based), so that a tier can run as several groups side by side.
 */
export async function runTier (tier: string, { part = 1, of = 1 } = {}) {
  const folder = new URL(`../${tier}/`, import.meta.url)
  const names = readdirSync(folder).filter((name) => name.endsWith('.test.ts')).sort()
  await runFiles(folder, names.filter((_, index) => index % of === part - 1))
}
