/**
 * The package a host installs holds the plugin and the client, never the standalone service: the
 * files npm would pack, and the imports that could pull service code into them.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import packageJson from '../../../package.json' with { type: 'json' }

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
// The plugin's four folders and the client; the service's own modules live outside them. Of src/,
// the plugin's faces: not the service's door (src/service-api.ts) and what only it reaches.
const SHIPPED_FOLDERS = ['src', 'plugins', 'routes', 'schemas', 'client']
const SHIPPED_FACES = ['src/plugin', 'src/options']
const SERVICE_ONLY = ['service', 'bench', 'test']

t.test('package.json files is a positive list: the plugin\'s faces and folders, the client; no exclusion', async (t) => {
  t.same(packageJson.files, [
    ...SHIPPED_FACES.map((face) => `dist/${face}.*`),
    ...SHIPPED_FOLDERS.filter((folder) => folder !== 'src').map((folder) => `dist/${folder}`)
  ])
})

t.test('npm would pack the plugin, the stores and the client, and nothing of the service', async (t) => {
  t.ok(existsSync(join(ROOT, 'dist/service/entry-points/server.js')), 'dist/ is built (npm install builds it), service included')
  const [{ files }] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']
  })) as Array<{ files: Array<{ path: string }> }>
  const paths = files.map(({ path }) => path)
  const outside = paths.filter((path) => !['package.json', 'README.md', 'LICENSE'].includes(path) &&
    !SHIPPED_FOLDERS.some((folder) => folder !== 'src' && path.startsWith(`dist/${folder}/`)) &&
    !SHIPPED_FACES.some((face) => path.startsWith(`dist/${face}.`)))
  t.same(outside, [], 'every packed file is in a shipped folder: none of the service\'s own modules')
  for (const target of Object.values(packageJson.exports).flatMap((entry) => typeof entry === 'string' ? [] : [entry.default, entry.types])) {
    t.ok(paths.includes(target.replace(/^\.\//, '')), `${target} is packed`)
  }
})

/** The relative imports of every TypeScript file under `folder`, as paths from the root. */
function importsUnder (folder: string): Array<{ file: string, target: string }> {
  return readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .flatMap((entry) => {
      const file = join(entry.parentPath, entry.name)
      const code = readFileSync(file, 'utf8')
      return [...code.matchAll(/(?:from|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map(([, specifier]) => ({
        file: relative(ROOT, file), target: relative(ROOT, resolve(dirname(file), specifier))
      }))
    })
}

t.test('every module a shipped one imports is shipped too; none of the service, the benchmark or the tests', async (t) => {
  const imports = SHIPPED_FOLDERS.flatMap(importsUnder)
  t.ok(imports.length > 50, 'the imports were found')
  const unshipped = imports.filter(({ target }) => !SHIPPED_FOLDERS.some((folder) => target.startsWith(`${folder}/`)))
  t.same(unshipped, [], `only ${SHIPPED_FOLDERS.join(', ')} are shipped`)
  t.notOk(SHIPPED_FOLDERS.some((folder) => SERVICE_ONLY.includes(folder)), 'no service-only folder is shipped')
})
