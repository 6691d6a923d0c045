// Bundles the compiled server entry into dist/server.mjs, the file production runs. Loading one
// file instead of about a thousand modules (typebox alone is some 300) takes start-up to the first
// answer from about 0.75 s to about 0.45 s on these machines. --entry and --outdir bundle another
// entry elsewhere (the tests bundle service/entry-points/server.ts).
import { rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, extname, join, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'
import { DRIVERS, TRACING, UNBUNDLED } from './runtime-packages.mjs'

const { values: { entry, outdir } } = parseArgs({
  options: { entry: { type: 'string', default: 'dist/service/entry-points/server.js' }, outdir: { type: 'string', default: 'dist' } }
})

/**
 * Swagger UI serves the files found next to its own modules (path.join(__dirname, …)). Bundled,
 * each of its modules gets its __dirname back: where that module lies in node_modules at run time.
 */
const swaggerUiDirname = {
  name: 'swagger-ui-dirname',
  setup (bundle) {
    bundle.onLoad({ filter: /node_modules[\\/]@fastify[\\/]swagger-ui[\\/].*\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8')
      if (!source.includes('__dirname')) return undefined
      const module = path.slice(path.lastIndexOf('node_modules') + 'node_modules/'.length).replaceAll('\\', '/')
      const dirname = `require('node:path').dirname(require.resolve(${JSON.stringify(module)}))`
      return { contents: `const __dirname = ${dirname};\n${source}`, loader: 'js' }
    })
  }
}

/**
 * The tracing packages stay in node_modules, imported by service/observe/tracing/ only when tracing is on.
 * Only there: prom-client's own require of @opentelemetry/api stays bundled, so that a service
 * without tracing loads nothing of OpenTelemetry from node_modules.
 */
const tracingExternal = {
  name: 'tracing-external',
  setup (bundle) {
    const names = new RegExp(`^(${TRACING.map((name) => name.replace(/[/.]/g, '\\$&')).join('|')})$`)
    bundle.onResolve({ filter: names }, ({ path, importer }) =>
      /[\\/]service[\\/]observe[\\/]tracing[\\/]/.test(importer) ? { path, external: true } : undefined)
  }
}

// Chunk names change with their content: last build's would stay behind.
rmSync(join(outdir, 'chunks'), { recursive: true, force: true })

// The webhook delivery thread's modules, which the server starts by file name (plugins/webhooks/thread/host-side.ts):
// the plugin's, under the tree the entry (service/entry-points/server) is in, compiled or source; with tracing on, the service's own.
const tree = dirname(dirname(dirname(entry)))
const deliveryThread = join(tree, 'plugins', 'webhooks', 'thread', `thread-entry${extname(entry)}`)
const tracedDeliveryThread = join(dirname(entry), `traced-delivery-thread${extname(entry)}`)

const entryPoints = { server: entry, 'webhook-delivery': deliveryThread, 'webhook-delivery-traced': tracedDeliveryThread }
const { metafile } = await build({
  entryPoints,
  outdir,
  outExtension: { '.js': '.mjs' },
  // Each store driver stays behind its dynamic import, in a chunk of its own: a bundle in one
  // file would load pg (~25 ms) at every start, whatever the store.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  plugins: [swaggerUiDirname, tracingExternal],
  // Native addons and pino's worker thread (started by file name) stay in node_modules.
  external: [...Object.values(DRIVERS), ...UNBUNDLED],
  // The bundled CommonJS modules require() Node's built-ins, which an ES module lacks. Aliased: a
  // bundled module may import createRequire under its own name.
  banner: { js: "import { createRequire as bundleCreateRequire } from 'node:module'; const require = bundleCreateRequire(import.meta.url);" },
  logLevel: 'warning',
  metafile: true
})

/**
 * The packages each entry loads before any line of it runs: its file's static imports and those of
 * the chunks it statically imports, transitively. A driver or a tracing package there would load
 * at every start, whatever the store or OTEL_* say (one static export through a face is enough),
 * and the runtime folder without it would not start at all: refused here, at every build.
 */
function loadedAtStart (output) {
  const files = [output]
  const packages = new Set()
  for (const file of files) {
    for (const { path, kind, external } of metafile.outputs[file].imports) {
      if (kind !== 'import-statement') continue
      if (external) packages.add(path)
      else if (!files.includes(path)) files.push(path)
    }
  }
  return packages
}
// Every entry is checked; the traced delivery thread starts only with tracing on: it may load tracing at once, never a driver.
const drivers = Object.values(DRIVERS)
for (const name of Object.keys(entryPoints)) {
  const packages = name === 'webhook-delivery-traced' ? drivers : [...drivers, ...TRACING]
  // The metafile names outputs relative to the working directory.
  const output = relative(process.cwd(), resolve(outdir, `${name}.mjs`))
  const early = [...loadedAtStart(output)].filter((imported) => packages.includes(imported))
  if (early.length > 0) {
    throw new Error(`${output} imports ${early.join(', ')} statically: keep each behind its dynamic import`)
  }
}
