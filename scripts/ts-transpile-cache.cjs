'use strict'
// The tests' TypeScript, transpiled once: a ts-node transpiler (tsconfig.json's "ts-node" section)
// that gives exactly what ts-node's own transpile-only path gives (the same function, the same
// compiler options), kept on disk by a digest of the source and those options. tap starts a
// process per test file and the tests start servers and worker threads, each loading some 150
// modules: without the cache every one of them transpiled them all again (~2.5 s of CPU each).
// The output is the same bytes, so coverage (mapped back through the same source maps) is too.
const { createHash } = require('node:crypto')
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs')
const { dirname, join } = require('node:path')

// ts-node's own transpile-only function: not exported, so reached by its path inside the package.
const tsNodeDir = dirname(require.resolve('@isaacs/ts-node-temp-fork-for-pr-2009/package.json'))
const { createTsTranspileModule } = require(join(tsNodeDir, 'dist/ts-transpile-module.js'))

const CACHE_DIR = process.env.TS_TRANSPILE_CACHE_DIR ?? join(__dirname, '../node_modules/.cache/ts-transpile')

/** @param {{ service: { config: { options: object }, projectLocalResolveHelper: (name: string, relative: boolean) => string }, nodeModuleEmitKind?: string }} options */
exports.create = function create ({ service, nodeModuleEmitKind }) {
  const ts = require(service.projectLocalResolveHelper('typescript', true))
  const compilerOptions = service.config.options
  const transpile = createTsTranspileModule(ts, { compilerOptions, reportDiagnostics: true })
  const packageJsonType = nodeModuleEmitKind === 'nodeesm' ? 'module' : 'commonjs'
  const variant = createHash('sha256')
    .update(JSON.stringify([ts.version, tsNodeDir, packageJsonType, compilerOptions]))
    .digest('hex')
  mkdirSync(CACHE_DIR, { recursive: true })

  return {
    transpile (code, { fileName }) {
      const key = createHash('sha256').update(variant).update('\0').update(fileName).update('\0').update(code).digest('hex')
      const file = join(CACHE_DIR, `${key}.json`)
      try {
        return JSON.parse(readFileSync(file, 'utf8'))
      } catch {
        const result = transpile(code, { fileName }, packageJsonType)
        // Only a clean result is kept: a syntax error is reported again on every load.
        if (result.diagnostics === undefined || result.diagnostics.length === 0) {
          const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`
          writeFileSync(partial, JSON.stringify({ outputText: result.outputText, sourceMapText: result.sourceMapText }))
          renameSync(partial, file) // whole or absent, for the processes reading it at the same time
        }
        return result
      }
    }
  }
}
