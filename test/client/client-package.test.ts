import { build } from 'esbuild'
import { readFile } from 'node:fs/promises'
import { relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENT_ENTRY = resolve(ROOT, 'client/index.ts')

t.test('the client loads nothing but its own files and the service\'s import-free protocol.ts at run time: no TypeBox, no Node built-in', async (t) => {
  // Bundled for a neutral platform: a `node:` import would not resolve, and a package it imported
  // (TypeBox through a value import of the schemas) would show among the inputs.
  const { metafile, outputFiles } = await build({
    entryPoints: [CLIENT_ENTRY], bundle: true, write: false, metafile: true, format: 'esm', platform: 'neutral', logLevel: 'silent'
  })
  t.strictSame(Object.keys(metafile.inputs).sort(), [
    'client/changes.ts', 'client/clock.ts', 'client/conditional.ts', 'client/errors.ts', 'client/index.ts', 'client/retry.ts',
    'schemas/exact-json.ts', 'schemas/protocol.ts' // what the service and the client agree on: the token rule, the "no such plant" message, exact int64 JSON
  ])
  t.strictSame(Object.values(metafile.outputs).flatMap(({ imports }) => imports), [], 'no import left in the bundle')
  t.comment(`the client bundled: ${outputFiles[0].contents.length} bytes`)
})

t.test('the build emits the client where the package exports it as plant-store/client', async (t) => {
  const pkg = JSON.parse(await readFile(resolve(ROOT, 'package.json'), 'utf8'))
  t.strictSame(pkg.exports['./client'], { types: './dist/client/index.d.ts', default: './dist/client/index.js' })

  const config = ts.getParsedCommandLineOfConfigFile(resolve(ROOT, 'tsconfig.build.json'), {}, {
    ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => t.fail(String(diagnostic.messageText))
  })!
  t.ok(config.fileNames.includes(CLIENT_ENTRY), 'tsconfig.build.json includes client/')
  const emitted = ts.getOutputFileNames(config, CLIENT_ENTRY, false).map((file) => `./${relative(ROOT, file)}`)
  t.ok(emitted.includes(pkg.exports['./client'].default), `emits ${pkg.exports['./client'].default}`)
  t.ok(emitted.includes(pkg.exports['./client'].types), `emits ${pkg.exports['./client'].types}`)
})
