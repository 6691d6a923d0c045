// Module hooks that run the TypeScript sources under tap: each .ts file compiled alone by esbuild
// (no type-check: `tsc --noEmit` does that), with an inline source map so that coverage and stack
// traces point at the .ts lines. Line breaks are kept: coverage is counted by line (tsx minifies
// whitespace, which made every line look covered).
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

const TYPESCRIPT = /^file:.*\.ts$/

export async function resolve (specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    // The sources import each other as './x.js' (NodeNext); the file on disk is x.ts.
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !/^\.{1,2}\/.*\.js$/.test(specifier)) throw error
    return nextResolve(`${specifier.slice(0, -3)}.ts`, context)
  }
}

export async function load (url, context, nextLoad) {
  if (!TYPESCRIPT.test(url)) return nextLoad(url, context)
  const file = fileURLToPath(url)
  // The running Node as the target: syntax it has (import attributes) is kept as written.
  const { code } = await transform(await readFile(file, 'utf8'), {
    loader: 'ts', format: 'esm', target: `node${process.versions.node}`, sourcemap: 'inline', sourcefile: file
  })
  return { format: 'module', source: code, shortCircuit: true }
}
