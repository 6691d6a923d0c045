import { Ajv } from 'ajv'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { forAjv } from '../../plugins/http/validation.js'
import { DEFAULT_MAX_TEXT_LENGTH, sharedSchemas, webhookEventSchemas } from '../../schemas/index.js'
import { OPTIONS_AJV_SCHEMA } from '../../src/options.js'
import plantStore from '../../src/plugin.js'
import { TOKEN } from '../helpers/plugin-app.js'

// The validators skip Ajv's check of each schema against the JSON Schema meta-schema at start-up
// (validateSchema: false): this test is that check, for every schema they compile.
const metaAjv = new Ajv({ strict: false })

function checked (t: Test, name: string, schema: unknown) {
  t.ok(metaAjv.validateSchema(forAjv(schema)), `${name} is valid: ${metaAjv.errorsText(metaAjv.errors)}`)
}

t.test('the meta-schema check catches a broken schema', async (t) => {
  t.notOk(metaAjv.validateSchema({ type: 'object', properties: { id: { minimum: 'one' } } }))
  t.notOk(metaAjv.validateSchema({ type: 'text' }))
})

t.test('every shared schema, at the default and another text limit, is a valid JSON Schema', async (t) => {
  for (const maxTextLength of [DEFAULT_MAX_TEXT_LENGTH, 10]) {
    for (const schema of sharedSchemas(maxTextLength)) checked(t, `${(schema as { $id?: string }).$id}`, schema)
  }
})

t.test('the webhook event schemas, at the default and another text limit, are valid JSON Schemas', async (t) => {
  for (const maxTextLength of [DEFAULT_MAX_TEXT_LENGTH, 10]) {
    for (const [name, schema] of Object.entries(webhookEventSchemas(maxTextLength))) checked(t, `${name} (${maxTextLength})`, schema)
  }
})

t.test('the plugin options schema is a valid JSON Schema', async (t) => {
  checked(t, 'options', OPTIONS_AJV_SCHEMA)
})

t.test('every route schema the validators compile is a valid JSON Schema', async (t) => {
  const app = Fastify()
  const parts: Array<[string, unknown]> = []
  app.addHook('onRoute', ({ method, url, schema }) => {
    for (const part of ['body', 'params', 'querystring', 'headers'] as const) {
      if (schema?.[part] !== undefined) parts.push([`${String(method)} ${url} ${part}`, schema[part]])
    }
  })
  await app.register(plantStore, { tokens: [TOKEN], store: 'memory:' })
  await app.ready()
  t.teardown(() => app.close())
  t.ok(parts.length >= 4, 'the plant routes have schemas')
  for (const [name, schema] of parts) checked(t, name, schema)
})
