import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The modules of ours and the packages a module loads, as esbuild resolves its imports, followed:
 * static ones, as it starts, and with `dynamic` its `import()`s too, all it may ever load. Type-only
 * imports are erased, never loaded.
 */
export async function importsReached (entry: string, { dynamic = false } = {}) {
  const { metafile } = await build({
    absWorkingDir: ROOT, entryPoints: [entry], bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent'
  })
  const modules = new Set<string>()
  const packages = new Set<string>()
  const visit = (path: string) => {
    if (modules.has(path)) return
    modules.add(path)
    for (const { path: imported, kind, external } of metafile.inputs[path]!.imports) {
      if (kind !== 'import-statement' && !(dynamic && kind === 'dynamic-import')) continue
      if (!external) visit(imported)
      else if (!imported.startsWith('node:')) packages.add(imported)
    }
  }
  visit(entry)
  return { modules: [...modules], packages: [...packages].sort() }
}
