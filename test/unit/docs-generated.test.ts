import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { Type } from 'typebox'
import { PlantStoreOptionsSchema } from '../../src/options.js'
import { ConfigSchema } from '../../service/config/index.js'
import {
  CONFIG_PAGE, fillRegions, generatedFiles, OPTIONS, OPTIONS_PAGE, OPTIONS_SOURCE, rowsOf, SETTINGS, table, withJsdoc, type SchemaNode
} from '../../service/entry-points/docs.js'
import { NODE_ARGS } from '../helpers/server-process.js'

// The manual's settings and options tables, and the options' JSDoc, are written from the schemas
// by `npm run docs`: checked here as openapi.json is, so a schema changed without it fails npm test.

const ROOT = join(import.meta.dirname, '..', '..')
const GENERATED = [OPTIONS_SOURCE, CONFIG_PAGE, OPTIONS_PAGE]
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const REGENERATE = 'run `npm run docs` after changing a setting or an option'

t.test('the settings and options tables and the options\' JSDoc are what the schemas write', async (t) => {
  const files = generatedFiles(read)
  t.same(Object.keys(files).sort(), [...GENERATED].sort())
  for (const path of GENERATED) t.equal(read(path), files[path], `${path} is up to date: ${REGENERATE}`)
})

t.test('every setting and every option has its row, and every option of the type its JSDoc', async (t) => {
  const configuration = read(CONFIG_PAGE)
  for (const name of Object.keys(ConfigSchema.properties)) t.match(configuration, `\n| \`${name}\` |`, `${name} has a row`)
  const options = read(OPTIONS_PAGE)
  for (const name of Object.keys(PlantStoreOptionsSchema.properties)) t.match(options, `\n| \`${name}\` |`, `${name} has a row`)
  const source = read(OPTIONS_SOURCE)
  t.match(source, /\/\*\* a non-empty array of accepted bearer tokens, each of visible ASCII characters \*\/\n {2}tokens\?:/)
  t.match(source, / {3}\* - `endpoints\[\]\.url`: an http:\/\/ or https:\/\/ URL\n/, 'an option nested in another is in its JSDoc')
})

t.test('a setting or an option added, or a description changed, without `npm run docs` fails the check', async (t) => {
  const config = { ...ConfigSchema, properties: { ...ConfigSchema.properties, NEW_SETTING: Type.String({ description: 'a new setting' }) } }
  const withSetting = generatedFiles(read, { config, options: PlantStoreOptionsSchema } as never)
  t.not(withSetting[CONFIG_PAGE], read(CONFIG_PAGE))
  t.match(withSetting[CONFIG_PAGE], '| `NEW_SETTING` | string | — |  | a new setting |')

  const properties = { ...PlantStoreOptionsSchema.properties, health: Type.Optional(Type.Boolean({ description: 'whether to add the health routes' })) }
  const changed = generatedFiles(read, { config: ConfigSchema, options: { ...PlantStoreOptionsSchema, properties } } as never)
  t.match(changed[OPTIONS_SOURCE], '  /** whether to add the health routes */\n  health?:', 'the JSDoc follows the description')
  t.match(changed[OPTIONS_PAGE], '| `health` | boolean | — |  | whether to add the health routes |')
  t.not(changed[OPTIONS_SOURCE], read(OPTIONS_SOURCE))
})

t.test('a table writes each kind of bound, and a default written in the description in its column', async (t) => {
  const schema: SchemaNode = {
    required: ['A'],
    properties: {
      A: { type: 'integer', maximum: 9, description: 'at most nine' },
      B: { type: 'array', minItems: 2, items: { type: 'string', minLength: 3, pattern: 'a|b' }, description: 'two or more (default: none)' },
      C: { anyOf: [{ const: false }, { type: 'object', properties: { D: { type: 'number', minimum: 1, description: 'inner' } } }], description: 'false or an object' },
      E: { type: 'string', description: 'a duration such as 15s (default)' },
      F: { type: 'string', description: 'the waits; default 5s,5m' },
      G: { type: 'string', format: 'uri', description: 'a URL with sqlite:<path> and WEBHOOK_URL, API=off but not API' }
    }
  }
  t.equal(table(rowsOf(schema), 'setting', SETTINGS), [
    '| setting | type | default | bounds | description |',
    '|---|---|---|---|---|',
    '| `A` | integer | required | at most 9 | at most nine |',
    '| `B` | array of string | `none` | at least 2 items; each at least 3 characters; each pattern `a\\|b` | two or more |',
    '| `C` | `false` or object | — |  | false or an object |',
    '| `C.D` | number | — | at least 1 | inner |',
    '| `E` | string | `15s` |  | a duration such as 15s |',
    '| `F` | string | `5s,5m` |  | the waits |',
    '| `G` | string | — | format `uri` | a URL with sqlite:&lt;path> and `WEBHOOK_URL`, `API=off` but not API |'
  ].join('\n'))
  t.match(table(rowsOf({ properties: { H: { enum: ['x', 'y'], default: 'x', description: 'x or y' } } }), 'option', OPTIONS),
    '| `H` | `"x"`, `"y"` | `"x"` |  | x or y |', 'the options\' values as JavaScript writes them')
})

t.test('what cannot be generated is refused with a line saying what to do', async (t) => {
  t.throws(() => fillRegions('docs/x.md', '# x\n', { table: 'a' }),
    { message: /^docs\/x\.md lacks its region <!-- generated: table --> … <!-- end generated: table -->: put both markers back/ })
  t.throws(() => withJsdoc('export interface PlantStoreOptions {\n  undescribed?: string\n}\n'),
    { message: /^PlantStoreOptions\.undescribed has no description in PlantStoreOptionsSchema: describe it there$/ })
})

t.test('`npm run docs` rewrites the stale files of the repository it runs in, and only those', async (t) => {
  const dir = t.testdir()
  for (const path of GENERATED) {
    mkdirSync(join(dir, dirname(path)), { recursive: true })
    copyFileSync(join(ROOT, path), join(dir, path))
  }
  writeFileSync(join(dir, CONFIG_PAGE), fillRegions(CONFIG_PAGE, read(CONFIG_PAGE), { 'webhook-settings': 'stale' }))
  const { stdout } = await promisify(execFile)(process.execPath, [...NODE_ARGS, join(ROOT, 'service/entry-points/docs.ts')], { cwd: dir })
  t.equal(stdout, `up to date: ${OPTIONS_SOURCE}\nwrote ${CONFIG_PAGE}\nup to date: ${OPTIONS_PAGE}\n`)
  for (const path of GENERATED) t.equal(readFileSync(join(dir, path), 'utf8'), read(path), `${path} as committed`)
})
