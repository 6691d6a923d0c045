import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { openapiText } from '../../service/entry-points/openapi.js'
import { NODE_ARGS } from '../helpers/server-process.js'

// The subtests are independent: the processes they run (npm, Redocly, Spectral) overlap.
t.jobs = 8

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..', '..')
const COMMITTED = join(ROOT, 'openapi.json')

t.test('the committed openapi.json is the document the running schemas generate', async (t) => {
  const generated = await openapiText()
  t.equal(readFileSync(COMMITTED, 'utf8'), generated, 'openapi.json is up to date: run `npm run openapi` after changing a schema or route')
})

t.test('`npm run openapi` writes the document to the path it is given', async (t) => {
  const target = join(t.testdir(), 'openapi.json')
  const { stdout } = await run(process.execPath, [...NODE_ARGS, join(ROOT, 'service', 'entry-points', 'openapi.ts'), target])
  t.equal(stdout, `wrote ${target}\n`)
  t.equal(readFileSync(target, 'utf8'), readFileSync(COMMITTED, 'utf8'))
})

t.test('Redocly finds no problem in openapi.json', async (t) => {
  const { stdout, stderr } = await run(join(ROOT, 'node_modules', '.bin', 'redocly'), ['lint', COMMITTED], {
    cwd: ROOT, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  })
  t.match(stderr + stdout, /Your API description is valid/)
  t.match(stderr + stdout, /2 problems are explicitly ignored/, 'only the accepted exceptions')
})

t.test('Spectral finds no problem in openapi.json: its OpenAPI rules and the OWASP ruleset, with the listed exceptions', async (t) => {
  // .spectral.yaml names the rulesets and the exceptions, each with its reason; any problem fails.
  const { stdout } = await run(join(ROOT, 'node_modules', '.bin', 'spectral'), ['lint', COMMITTED, '--fail-severity', 'hint'], { cwd: ROOT })
  t.match(stdout, /No results with a severity of 'hint' or higher found!/)
})

t.test('POST /plants is the operation SPEC.md describes', async (t) => {
  const doc = JSON.parse(readFileSync(COMMITTED, 'utf8'))
  const { NewPlant, Plant, Error: ErrorSchema } = doc.components.schemas
  t.match(doc.components.securitySchemes.bearerAuth, {
    type: 'http', scheme: 'bearer', description: /API_TOKENS.*every plant route \(create, read, list, delete\)/
  })
  t.same(doc.info.version, '1.0.0')
  t.same(doc.info.license.name, 'MIT')
  // Plant: name required, tag optional, both strings; NewPlant: Plant plus a required int64 id.
  t.same(Plant.required, ['name'])
  t.same(Object.keys(Plant.properties).sort(), ['name', 'tag'])
  t.same([Plant.properties.name.type, Plant.properties.tag.type], ['string', 'string'])
  t.same(NewPlant.required.sort(), ['id', 'name'])
  t.same(Object.keys(NewPlant.properties).sort(), ['id', 'name', 'tag'])
  t.same([NewPlant.properties.id.type, NewPlant.properties.id.format], ['integer', 'int64'])
  // Error: error (int32) and message, both required.
  t.same(ErrorSchema.required.sort(), ['error', 'message'])
  t.same([ErrorSchema.properties.error.type, ErrorSchema.properties.error.format], ['integer', 'int32'])
  t.equal(ErrorSchema.properties.message.type, 'string')

  const create = doc.paths['/plants'].post
  t.same(create.security, [{ bearerAuth: [] }])
  t.equal(create.requestBody.required, true)
  t.same(Object.keys(create.requestBody.content), ['application/json'])
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPlant' })
  t.same(create.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Plant' })
  t.same(create.responses['400'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
  t.same(create.parameters ?? [], [], 'no path, query or header parameters')
})
