'use strict'
// The tests' TypeScript, transpiled by esbuild and kept on disk: a ts-node transpiler (tsconfig.json's
// "ts-node" section). tap starts a process per test group, and the tests start servers and worker
// threads, each loading some 150 to 650 modules through ts-node.
// - esbuild, not TypeScript's transpileModule: both strip the types of one file at a time, but
//   TypeScript took ~20 ms a file, and on a fresh clone every process that started before the cache
//   held a file transpiled it again (npm test cost ~50 s more CPU cold than warm). esbuild takes well
//   under 1 ms, and is already the build's bundler (scripts/build.mjs).
// - Types are checked by `tsc --noEmit` (npm test runs it beside tap), not here.
// - The cache is keyed by a digest of the source, its name and these options: unchanged files are
//   read back instead of transpiled again. Coverage is mapped back through the source maps.
const { createHash } = require('node:crypto')
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs')
const { join } = require('node:path')
const esbuild = require('esbuild')

const CACHE_DIR = process.env.TS_TRANSPILE_CACHE_DIR ?? join(__dirname, '../node_modules/.cache/ts-transpile')

/**
 * What tsconfig.json's compiler options mean for one file's output (esbuild reads none of it by
 * itself): ES2022 class fields with define semantics, imports used only as types elided.
 */
const TSCONFIG = { compilerOptions: { useDefineForClassFields: true, verbatimModuleSyntax: false } }

/** @param {{ nodeModuleEmitKind?: string }} options */
exports.create = function create ({ nodeModuleEmitKind }) {
  const format = nodeModuleEmitKind === 'nodeesm' ? 'esm' : 'cjs'
  const variant = createHash('sha256').update(JSON.stringify([esbuild.version, format, TSCONFIG])).digest('hex')
  mkdirSync(CACHE_DIR, { recursive: true })

  return {
    transpile (code, { fileName }) {
      const key = createHash('sha256').update(variant).update('\0').update(fileName).update('\0').update(code).digest('hex')
      const file = join(CACHE_DIR, `${key}.json`)
      try {
        return JSON.parse(readFileSync(file, 'utf8'))
      } catch {
        // A syntax error throws, and ts-node reports it with the file and line.
        const { code: outputText, map: sourceMapText } = esbuild.transformSync(code, {
          loader: 'ts',
          format,
          // No syntax lowered: Node 20 runs all the sources use (tsc's target ES2022 lowers nothing of
          // theirs), and esbuild's es2022 would drop import attributes (`with { type: 'json' }`).
          target: 'esnext',
          sourcemap: 'external',
          sourcefile: fileName,
          tsconfigRaw: TSCONFIG
        })
        const result = { outputText, sourceMapText }
        const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`
        writeFileSync(partial, JSON.stringify(result))
        renameSync(partial, file) // whole or absent, for the processes reading it at the same time
        return result
      }
    }
  }
}
