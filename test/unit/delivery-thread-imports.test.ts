import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import t from 'tap'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const THREAD_ENTRY = 'plugins/webhooks/thread/thread-entry.ts'

/** The packages a module reaches through its static imports at run time (type-only imports are not), as esbuild resolves them. */
async function packagesReached (entry: string) {
  const { metafile } = await build({
    absWorkingDir: ROOT, entryPoints: [entry], bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent'
  })
  const packages = new Set<string>()
  for (const { imports } of Object.values(metafile.inputs)) {
    for (const { path, external } of imports) if (external && !path.startsWith('node:')) packages.add(path)
  }
  return { modules: Object.keys(metafile.inputs), packages: [...packages].sort() }
}

t.test('the delivery thread loads no TypeBox: the option it runs is checked on the API side (options-schema.ts)', async (t) => {
  const { modules, packages } = await packagesReached(THREAD_ENTRY)
  t.notOk(packages.some((name) => name === 'typebox' || name.startsWith('typebox/')), 'no TypeBox module', { packages })
  t.notOk(modules.includes('plugins/webhooks/options-schema.ts'), 'not the option\'s schema', { modules })
  t.ok(modules.includes('plugins/webhooks/settings.ts'), 'but the settings it decodes with')

  // The check itself: the API side's entry reaches TypeBox through the same walk.
  const api = await packagesReached('src/plugin.ts')
  t.ok(api.packages.includes('typebox'), 'the plugin\'s entry does reach TypeBox')
  t.ok(api.modules.includes('plugins/webhooks/options-schema.ts'), 'and the option\'s schema')
})
