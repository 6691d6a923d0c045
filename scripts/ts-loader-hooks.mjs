// Node's module hooks (module.register) for the TypeScript sources: an import of `./x.js` that has
// a `./x.ts` beside it resolves to it, as tsc's NodeNext resolution reads it, and a `.ts` file outside
// node_modules is loaded with its types stripped by esbuild (the build's bundler), with an inline
// source map for coverage and stack traces. Types are checked by `tsc --noEmit` (npm test runs it
// beside tap), not here.
// - Not ts-node, which tap's TypeScript plugin runs: it loads TypeScript in every process and thread,
//   ~0.35 s of CPU each, and a run starts some 70. Not tsx: on Node 20 it registers no hooks in a
//   worker thread (privatenumber/tsx#354), and the delivery thread runs from source in the tests.
// - A file's output is kept on disk, keyed by a digest of its source, its name and esbuild's
//   version: each process after the first reads it back, and loads no esbuild.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const CACHE_DIR = process.env.TS_TRANSPILE_CACHE_DIR ?? fileURLToPath(new URL('../node_modules/.cache/ts-transpile/', import.meta.url))
const ESBUILD_VERSION = require('esbuild/package.json').version

/**
 * What tsconfig.json's compiler options mean for one file's output (esbuild reads none of it by
 * itself): ES2022 class fields with define semantics, imports used only as types elided. No syntax
 * is lowered: Node 20 runs all the sources use, and esbuild's es2022 would drop import attributes.
 */
const OPTIONS = { loader: 'ts', format: 'esm', target: 'esnext', sourcemap: 'inline', tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, verbatimModuleSyntax: false } } }
const VARIANT = createHash('sha256').update(JSON.stringify([ESBUILD_VERSION, OPTIONS])).digest('hex')

const isSource = (url) => url.startsWith('file:') && !url.includes('/node_modules/')

export async function resolve (specifier, context, nextResolve) {
  if (specifier.endsWith('.js') && /^\.\.?\//.test(specifier) && context.parentURL?.endsWith('.ts') && isSource(context.parentURL)) {
    const source = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL)
    if (existsSync(source)) return { url: source.href, format: 'module', shortCircuit: true }
  }
  return nextResolve(specifier, context)
}

export async function load (url, context, nextLoad) {
  if (!url.endsWith('.ts') || !isSource(url)) return nextLoad(url, context)
  const file = fileURLToPath(url)
  return { format: 'module', source: transpiled(readFileSync(file, 'utf8'), file), shortCircuit: true }
}

function transpiled (code, file) {
  const key = createHash('sha256').update(VARIANT).update('\0').update(file).update('\0').update(code).digest('hex')
  const cached = `${CACHE_DIR}${key}.js`
  try {
    return readFileSync(cached, 'utf8')
  } catch {
    // A syntax error throws, naming the file and line.
    const { code: output } = require('esbuild').transformSync(code, { ...OPTIONS, sourcefile: file })
    mkdirSync(CACHE_DIR, { recursive: true })
    const partial = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`
    writeFileSync(partial, output)
    renameSync(partial, cached) // whole or absent, for the processes reading it at the same time
    return output
  }
}
