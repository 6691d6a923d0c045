import swagger from '@fastify/swagger'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import Fastify from 'fastify'
import t from 'tap'
import { parseExactJson } from '../../schemas/exact-json.js'
import { INT64_MAX, INT64_MIN } from '../../schemas/index.js'
import plantStore, { openapiWebhooks, securitySchemes, swaggerReferenceName } from '../../src/plugin.js'
import { plantCreatedPayload, plantDeletedPayload, plantUpdatedPayload } from '../../plugins/webhooks/delivery/payload.js'
import { messageId, webhookHeaders } from '../../plugins/webhooks/delivery/signing.js'
import { build, TOKEN } from '../helpers/app.js'

const HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'webhook-cursor']
const AT = new Date('2026-11-24T00:20:00.123Z')
const IDS = [2n ** 53n + 1n, INT64_MAX, INT64_MIN]

async function served (options = {}) {
  const { app } = await build(t, options)
  // JSON.parse is exact here: the document holds no integer past 2^53.
  return (await app.inject({ url: '/documentation/json' })).json()
}

/** A validator of the document's schemas as any OpenAPI 3.1 tool reads them (formats checked). */
function validator () {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  return ajv
}

const bodySchema = (doc: any, key: string) => doc.webhooks[key].post.requestBody.content['application/json'].schema

t.test('the document declares plant.created at the original\'s webhooks["/plant/webhook"] and plant.deleted beside it', async (t) => {
  const doc = await served()
  t.same(Object.keys(doc.webhooks), ['/plant/webhook', '/plant/deleted', '/plant/updated'])
  const expected = {
    '/plant/webhook': ['plantCreated', 'plant.created'], '/plant/deleted': ['plantDeleted', 'plant.deleted'], '/plant/updated': ['plantUpdated', 'plant.updated']
  }
  const pathIds = Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((operation: any) => operation.operationId))
  for (const [key, [operationId, type]] of Object.entries(expected)) {
    const item = doc.webhooks[key]
    t.same(Object.keys(item), ['post'], `${key}: a POST`)
    const { post } = item
    t.equal(post.operationId, operationId)
    t.notOk(pathIds.includes(operationId), `${operationId} is unique in the document`)
    t.ok(post.summary, `${key}: summary`)
    t.equal(post.requestBody.required, true)
    t.same(Object.keys(post.requestBody.content), ['application/json'])
    t.same(bodySchema(doc, key).properties.type, { type: 'string', const: type, description: 'The event type (Standard Webhooks\' `type`)', examples: [type] })
    t.match(bodySchema(doc, key).properties.timestamp, { type: 'string', format: 'date-time' })
    t.same(post.parameters.map(({ name, in: where, required }: any) => [name, where, required]),
      HEADERS.map((name) => [name, 'header', true]), `${key}: the three Standard Webhooks headers and the feed's cursor, required`)
    t.same(Object.keys(post.responses), ['200', '410', 'default'])
    t.match(post.responses['200'].description, /any 2xx/)
    t.match(post.responses['410'].description, /disabled/)
    t.same(post.security, [], 'no security scheme: the receiver checks the signature')
    // What a receiver must know, said in the operation itself.
    for (const rule of [/HMAC-SHA256|signature/, /whsec_/, /5 minutes/, /5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h/, /±20 %/,
      /at least 60 s/, /Retry-After/, /At least once/, /no promised order/, /deduplicate on `webhook-id`/, /410 Gone/, /15 s/]) {
      t.match(post.description, rule, `${key}: ${rule}`)
    }
  }
  t.match(doc.webhooks['/plant/webhook'].post.requestBody.description, /^Information about a new plant added to the store/,
    'the original\'s words')
  t.same(bodySchema(doc, '/plant/webhook').required, ['type', 'timestamp', 'id', 'name'])
  t.same(bodySchema(doc, '/plant/deleted').required, ['type', 'timestamp', 'id'])
  t.same(bodySchema(doc, '/plant/updated').required, ['type', 'timestamp', 'id', 'name'])
  t.same(bodySchema(doc, '/plant/webhook').properties.id, doc.components.schemas.NewPlant.properties.id, 'the id as NewPlant writes it')
  t.match(bodySchema(doc, '/plant/deleted').properties.id, { type: 'integer', format: 'int64' })
})

t.test('the headers the service signs with fit the documented header parameters, examples too', async (t) => {
  const doc = await served()
  const ajv = validator()
  const keys = [Buffer.alloc(32, 1), Buffer.alloc(24, 2)]
  for (const key of Object.keys(doc.webhooks)) {
    const schemas = Object.fromEntries(doc.webhooks[key].post.parameters.map(({ name, schema, example }: any) => {
      t.ok(ajv.validate(schema, example), `${key} ${name}: its example fits`)
      return [name, schema]
    }))
    const body = plantDeletedPayload(1n, AT)
    for (const signing of [keys.slice(0, 1), keys]) {
      const sent = webhookHeaders(signing, messageId(), body, Date.now(), 'ZmVlZC5leGFtcGxlLjAuNDI')
      for (const name of HEADERS) {
        // Header values are text; the document's integer is written in decimal digits.
        const value = name === 'webhook-timestamp' ? Number(sent[name]) : sent[name]
        t.ok(ajv.validate(schemas[name], value), `${key} ${name} with ${signing.length} secret(s): ${sent[name]}`)
      }
    }
  }
})

t.test('the payloads the service sends are valid against the served webhook schemas, ids exact', async (t) => {
  const doc = await served()
  const ajv = validator()
  const created = ajv.compile(bodySchema(doc, '/plant/webhook'))
  const deleted = ajv.compile(bodySchema(doc, '/plant/deleted'))
  const newPlant = ajv.compile(doc.components.schemas.NewPlant)
  const createdFields = Object.keys(bodySchema(doc, '/plant/webhook').properties)
  const deletedFields = Object.keys(bodySchema(doc, '/plant/deleted').properties)
  const updated = ajv.compile(bodySchema(doc, '/plant/updated'))
  const updatedFields = Object.keys(bodySchema(doc, '/plant/updated').properties)

  for (const id of IDS) {
    for (const plant of [{ id, name: 'Fern' }, { id, name: 'Fern 🌿 "quoted"', tag: 'green' }]) {
      const text = plantCreatedPayload(plant, AT)
      const title = `plant.created ${text}`
      const rounded = JSON.parse(text)
      t.ok(created(rounded), `${title}: ${ajv.errorsText(created.errors)}`)
      t.ok(newPlant(rounded), `${title}: also a valid NewPlant`)
      t.notOk(deleted(rounded), `${title}: not a plant.deleted`)
      // Types and formats above; the id's int64 range on the exact value, which JSON.parse rounds.
      const exact = parseExactJson(text) as Record<string, unknown>
      t.same(exact, { type: 'plant.created', timestamp: AT.toISOString(), ...plant }, `${title}: parsed exactly`)
      t.ok(typeof exact.id === 'bigint' && exact.id >= INT64_MIN && exact.id <= INT64_MAX, `${title}: an int64`)
      t.same(Object.keys(exact), createdFields.filter((field) => field in exact), `${title}: documented fields, in order`)
    }
    const text = plantDeletedPayload(id, AT)
    t.ok(deleted(JSON.parse(text)), `plant.deleted ${text}: ${ajv.errorsText(deleted.errors)}`)
    t.notOk(created(JSON.parse(text)), `plant.deleted ${text}: not a plant.created`)
    t.same(parseExactJson(text), { type: 'plant.deleted', timestamp: AT.toISOString(), id })
    t.same(Object.keys(parseExactJson(text) as object), deletedFields)
    for (const plant of [{ id, name: 'Fern' }, { id, name: 'Fern 🌿 "quoted"', tag: 'green' }]) {
      const updatedText = plantUpdatedPayload(plant, AT)
      t.ok(updated(JSON.parse(updatedText)), `plant.updated ${updatedText}: ${ajv.errorsText(updated.errors)}`)
      t.notOk(created(JSON.parse(updatedText)), `plant.updated ${updatedText}: not a plant.created`)
      t.same(parseExactJson(updatedText), { type: 'plant.updated', timestamp: AT.toISOString(), ...plant }, 'parsed exactly')
      t.same(Object.keys(parseExactJson(updatedText) as object), updatedFields.filter((field) => field in plant || field === 'type' || field === 'timestamp'))
    }
  }

  // The schemas do refuse what the service never sends.
  t.notOk(created(JSON.parse(plantCreatedPayload({ id: 1n, name: 'x'.repeat(1001) }, AT))), 'a name over the limit')
  t.notOk(created({ type: 'plant.created', timestamp: 'yesterday', id: 1, name: 'Fern' }), 'a timestamp that is no date-time')
  t.notOk(deleted({ type: 'plant.deleted', timestamp: AT.toISOString(), id: '1' }), 'an id in a string')
})

t.test('the webhook events take the service\'s text limit, as its routes do', async (t) => {
  const doc = await served({ maxTextLength: 50 })
  const { name, tag } = bodySchema(doc, '/plant/webhook').properties
  t.equal(name.maxLength, 50)
  t.equal(tag.maxLength, 50)
  t.same(name, doc.components.schemas.NewPlant.properties.name)
})

t.test('a host puts openapiWebhooks() in its @fastify/swagger document as they are', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Host', version: '1.0.0' }, components: { securitySchemes }, webhooks: openapiWebhooks(50) },
    refResolver: { buildLocalReference: swaggerReferenceName }
  })
  await host.register(plantStore, { prefix: '/garden', tokens: [TOKEN], store: 'memory:', maxTextLength: 50 })
  await host.ready()
  const doc = host.swagger() as any
  t.same(doc.webhooks, JSON.parse(JSON.stringify(openapiWebhooks(50))))
  t.notMatch(JSON.stringify(doc.webhooks), /\$ref/, 'self-contained: nothing to resolve in the host\'s components')
  t.equal(bodySchema(doc, '/plant/webhook').properties.name.maxLength, 50)
  t.equal(bodySchema(JSON.parse(JSON.stringify({ webhooks: openapiWebhooks() })), '/plant/webhook').properties.name.maxLength, 1000,
    'the default limit without an argument')
})
