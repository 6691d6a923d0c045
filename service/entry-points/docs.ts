import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { PlantStoreOptionsSchema } from '../../src/options.js'
import { ConfigSchema } from '../config/index.js'
import { WebhookSettings } from '../config/webhooks.js'
import { TracingSettings } from '../observe/tracing/settings.js'

/** A schema as the tables read it: the JSON Schema TypeBox writes. */
export interface SchemaNode {
  type?: string
  description?: string
  default?: unknown
  enum?: readonly unknown[]
  const?: unknown
  anyOf?: SchemaNode[]
  items?: SchemaNode
  properties?: Record<string, SchemaNode>
  required?: string[]
  minimum?: number
  maximum?: number
  minItems?: number
  minLength?: number
  pattern?: string
  format?: string
}

/** How a table writes a schema's values: the environment's text, or the options' JavaScript. */
export interface Dialect {
  literal (value: unknown): string
  /** The names a description mentions that are set in code type (the settings' names). */
  names: ReadonlySet<string>
}

export interface Row { name: string, node: SchemaNode, required: boolean }

export const CONFIG_PAGE = 'docs/configuration.md'
export const OPTIONS_PAGE = 'docs/plugin-options.md'
export const OPTIONS_SOURCE = 'src/options.ts'

/** The rows of an object's properties, and of the nested ones that have a description of their own. */
export function rowsOf (schema: SchemaNode, prefix = ''): Row[] {
  const rows: Row[] = []
  for (const [key, node] of Object.entries(schema.properties ?? {})) {
    if (node.description === undefined) continue
    const name = `${prefix}${key}`
    rows.push({ name, node, required: schema.required?.includes(key) ?? false })
    for (const inner of [node, ...(node.anyOf ?? [])]) rows.push(...rowsOf(inner, `${name}.`))
    if (node.items !== undefined) rows.push(...rowsOf(node.items, `${name}[].`))
  }
  return rows
}

const unique = (parts: string[]) => [...new Set(parts)]
const code = (text: string) => `\`${text}\``

function typeOf (node: SchemaNode, dialect: Dialect): string {
  if (node.enum !== undefined) return node.enum.map((value) => code(dialect.literal(value))).join(', ')
  if ('const' in node) return code(dialect.literal(node.const))
  if (node.anyOf !== undefined) return unique(node.anyOf.map((alternative) => typeOf(alternative, dialect))).join(' or ')
  if (node.type === 'array') return `array of ${typeOf(node.items!, dialect)}`
  return node.type!
}

function boundsOf (node: SchemaNode): string[] {
  const bounds: string[] = []
  const { minimum, maximum } = node
  if (minimum !== undefined && maximum !== undefined) bounds.push(`${minimum} to ${maximum}`)
  else if (minimum !== undefined) bounds.push(`at least ${minimum}`)
  else if (maximum !== undefined) bounds.push(`at most ${maximum}`)
  if (node.minItems !== undefined) bounds.push(`at least ${node.minItems} item${node.minItems === 1 ? '' : 's'}`)
  if (node.minLength !== undefined) bounds.push(`at least ${node.minLength} character${node.minLength === 1 ? '' : 's'}`)
  if (node.pattern !== undefined) bounds.push(`pattern ${code(node.pattern)}`)
  const formats = unique([node, ...(node.anyOf ?? [])].map(({ format }) => format).filter((format) => format !== undefined))
  if (formats.length > 0) bounds.push(`format ${formats.map(code).join(' or ')}`)
  if (node.items !== undefined) bounds.push(...boundsOf(node.items).map((bound) => `each ${bound}`))
  return bounds
}

// A default the schema cannot hold (the code applies it) is written in the description, in one of
// these forms: the table shows it in its column, and the description without it where it was an aside.
const DEFAULTS_IN_TEXT: Array<[RegExp, string]> = [
  [/\s*\(default:? ([^()]*)\)/, ''],
  [/; default (\S+)$/, ''],
  [/such as (\S+) \(default\)/, 'such as $1'],
  [/^(\S+) \(the default\b/, '$&']
]

/** A default as a cell: a value in code type, a phrase as it is. */
const valueCell = (text: string) => text === '' ? 'empty' : /\s/.test(text) ? text : code(text)

/** The default and the description, the default taken out of the text where it was written there. */
function defaultOf ({ node, required }: Row, dialect: Dialect): [string, string] {
  const description = node.description!
  if ('default' in node) return [valueCell(dialect.literal(node.default)), description]
  for (const [pattern, replacement] of DEFAULTS_IN_TEXT) {
    const written = pattern.exec(description)
    if (written !== null) return [valueCell(written[1]), description.replace(pattern, replacement)]
  }
  return [required ? 'required' : '—', description]
}

/**
 * A description as a table cell: `<` kept from reading as HTML, and in code type the dialect's
 * names that read as names (with an underscore, or given a value: API=off; not the word API).
 */
const describe = (text: string, dialect: Dialect) => text.replace(/</g, '&lt;').replace(/\b([A-Z][A-Z0-9_]*)(=[\w.-]+)?/g,
  (match, name: string, value?: string) => dialect.names.has(name) && (name.includes('_') || value !== undefined) ? code(match) : match)

/** A table of rows: name, type, default, bounds, description. */
export function table (rows: Row[], heading: string, dialect: Dialect): string {
  const lines = rows.map((row) => {
    const [fallback, description] = defaultOf(row, dialect)
    const cells = [code(row.name), typeOf(row.node, dialect), fallback, boundsOf(row.node).join('; '), describe(description, dialect)]
    // A pipe would end the cell, even inside code type.
    return `| ${cells.map((text) => text.replace(/\|/g, '\\|')).join(' | ')} |`
  })
  return [`| ${heading} | type | default | bounds | description |`, '|---|---|---|---|---|', ...lines].join('\n')
}

/** The settings' dialect: values as the environment holds them, the settings' names in code type. */
export const SETTINGS: Dialect = { literal: (value) => String(value), names: new Set(Object.keys(ConfigSchema.properties)) }
/** The options' dialect: values as JavaScript writes them. */
export const OPTIONS: Dialect = { literal: (value) => JSON.stringify(value), names: new Set() }

/** The schemas the generated parts are written from. */
export interface Schemas { config: SchemaNode, options: SchemaNode }
// TypeBox's types name more than the JSON they write: the tables read only that JSON.
const SCHEMAS = { config: ConfigSchema, options: PlantStoreOptionsSchema } as unknown as Schemas

/** The option names the PlantStoreOptions interface declares: the others are Fastify's register options. */
export function interfaceKeys (source: string): string[] {
  const start = source.indexOf('export interface PlantStoreOptions {')
  const body = source.slice(start, source.indexOf('\n}\n', start))
  return [...body.matchAll(/^ {2}(\w+)\??:/gm)].map(([, key]) => key)
}

/** What the regions of each page hold, given the schemas and the options' source as it is. */
function regionsOf (schemas: Schemas, optionsSource: string): Record<string, Record<string, string>> {
  const settings = rowsOf(schemas.config)
  const inGroup = (group: object, inside: boolean) => settings.filter(({ name }) => (name in group) === inside)
  const keys = interfaceKeys(optionsSource)
  const options = (plugin: boolean) => rowsOf(schemas.options).filter(({ name }) => keys.includes(name.split('.')[0]) === plugin)
  return {
    [CONFIG_PAGE]: {
      'service-settings': table(inGroup({ ...WebhookSettings, ...TracingSettings }, false), 'setting', SETTINGS),
      'webhook-settings': table(inGroup(WebhookSettings, true), 'setting', SETTINGS),
      'tracing-settings': table(inGroup(TracingSettings, true), 'setting', SETTINGS)
    },
    [OPTIONS_PAGE]: {
      'plugin-options': table(options(true), 'option', OPTIONS),
      'register-options': table(options(false), 'option', OPTIONS)
    }
  }
}

/** A page with each `<!-- generated: name -->` … `<!-- end generated: name -->` region holding what it should. */
export function fillRegions (path: string, text: string, regions: Record<string, string>): string {
  let filled = text
  for (const [name, content] of Object.entries(regions)) {
    const start = `<!-- generated: ${name} -->\n`
    const end = `<!-- end generated: ${name} -->`
    const from = filled.indexOf(start)
    const to = filled.indexOf(end, from)
    if (from < 0 || to < 0) throw new Error(`${path} lacks its region ${start.trim()} … ${end}: put both markers back where the table goes`)
    filled = `${filled.slice(0, from + start.length)}${content}\n${filled.slice(to)}`
  }
  return filled
}

/** The JSDoc of an option: its description, then those of the options nested in it. */
function jsdoc (options: Row[], name: string): string {
  const [row, ...nested] = options.filter((candidate) => candidate.name === name || candidate.name.startsWith(`${name}.`))
  if (row?.name !== name) throw new Error(`PlantStoreOptions.${name} has no description in PlantStoreOptionsSchema: describe it there`)
  if (nested.length === 0) return `  /** ${row.node.description!} */`
  const inner = nested.map((option) => `   * - \`${option.name.slice(name.length + 1)}\`: ${option.node.description!}`)
  return ['  /**', `   * ${row.node.description!}`, ...inner, '   */'].join('\n')
}

/** The options' source with each property of PlantStoreOptions under the JSDoc its schema's descriptions make. */
export function withJsdoc (source: string, schema = SCHEMAS.options): string {
  const options = rowsOf(schema)
  const start = source.indexOf('export interface PlantStoreOptions {')
  const end = source.indexOf('\n}\n', start)
  // The comments written before are dropped, then each property gets its own.
  const properties = source.slice(start, end).replace(/^ {2}\/\*\*[\s\S]*?\*\/\n/gm, '')
  const documented = properties.replace(/^ {2}(\w+)(\??:.*)$/gm, (line, key: string) => `${jsdoc(options, key)}\n${line}`)
  return `${source.slice(0, start)}${documented}${source.slice(end)}`
}

/**
 * The text each generated file should have, from the schemas and the files as they are: the
 * settings' and options' tables of the manual, and the options' JSDoc.
 */
export function generatedFiles (read: (path: string) => string, schemas = SCHEMAS): Record<string, string> {
  const files: Record<string, string> = { [OPTIONS_SOURCE]: withJsdoc(read(OPTIONS_SOURCE), schemas.options) }
  for (const [path, regions] of Object.entries(regionsOf(schemas, read(OPTIONS_SOURCE)))) files[path] = fillRegions(path, read(path), regions)
  return files
}

// `npm run docs` rewrites the generated parts of the repository it runs in (npm runs it at the root).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const read = (path: string) => readFileSync(path, 'utf8')
  for (const [path, text] of Object.entries(generatedFiles(read))) {
    const stale = read(path) !== text
    if (stale) writeFileSync(path, text)
    process.stdout.write(`${stale ? 'wrote' : 'up to date:'} ${path}\n`)
  }
}
