import type { InjectOptions } from 'fastify'
import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import type { PlantStore } from '../../plugins/store/types.js'
import { AUTH, build, JSON_TYPE, type App } from '../helpers/app.js'
import { eventually } from '../helpers/webhooks.js'

async function documentOf (app: App) {
  return (await app.inject({ url: '/documentation/json' })).json()
}

/** Every operation of the document, with its method and path. */
function operations (doc: any): Array<{ method: string, path: string, operation: any }> {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, any>).map(([method, operation]) => ({ method, path, operation })))
}

const PLANT_ROUTES = ['post /plants', 'get /plants', 'get /plants/{id}', 'put /plants/{id}', 'delete /plants/{id}', 'get /plants/changes']

t.test('the OpenAPI document describes the service as SPEC.md does', async (t) => {
  const { app } = await build(t)
  const doc = await documentOf(app)
  t.equal(doc.openapi, '3.1.0')
  t.match(doc.info, { version: '1.0.0', license: { name: 'MIT' } })
  t.match(doc.components.securitySchemes, { bearerAuth: { type: 'http', scheme: 'bearer' } })

  const { Plant, NewPlant, Error: ErrorSchema } = doc.components.schemas
  t.same(Plant.required, ['name'])
  t.same(Object.keys(Plant.properties), ['name', 'tag'])
  t.same(NewPlant.required, ['id', 'name'])
  t.match(NewPlant.properties, { id: { type: 'integer', format: 'int64' }, name: { type: 'string' }, tag: { type: 'string' } })
  t.same(ErrorSchema.required, ['error', 'message'])
  t.match(ErrorSchema.properties, { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } })
  t.same(Object.keys(doc.components.schemas).sort(), ['Error', 'HealthStatus', 'NewPlant', 'Plant', 'PlantList', 'PlantUpdate'],
    'readable names, without the plugin\'s $id prefix')

  const create = doc.paths['/plants'].post
  t.same(create.security, [{ bearerAuth: [] }])
  t.equal(create.requestBody.required, true)
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPlant' })
  t.same(create.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Plant' })
  for (const status of ['400', '401', '409', '413', '415', '429', '500', '503']) {
    t.same(create.responses[status].content['application/json'].schema, { $ref: '#/components/schemas/Error' }, status)
  }
})

t.test('the read, list and delete routes are documented with exact int64 ids and their bounds', async (t) => {
  const { app } = await build(t)
  const doc = await documentOf(app)
  const read = doc.paths['/plants/{id}'].get
  t.match(read.parameters, [{ in: 'path', name: 'id', required: true, schema: { type: 'integer', format: 'int64' }, example: 1 }])
  t.same(read.security, [{ bearerAuth: [] }])
  t.ok(doc.paths['/plants/{id}'].delete.responses['204'])

  const [limit, after] = doc.paths['/plants'].get.parameters
  t.match(limit, { name: 'limit', required: false, schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 1000, default: 100 } },
    'limit is optional: it has a default')
  t.match(after, { name: 'after', required: false, schema: { type: 'integer', format: 'int64' } })
  // Swagger UI pre-fills an example: after a first create of id 1, `after=100` would list nothing.
  t.equal(after.schema.examples ?? after.example ?? after.examples, undefined, 'after has no example to pre-fill')

  const { PlantList, Plant, NewPlant, Error: ErrorSchema } = doc.components.schemas
  t.match(PlantList.items, { title: 'ListedPlant', description: 'A stored plant, with its id', required: ['id', 'name'] })
  t.same(PlantList.items.properties, NewPlant.properties, 'a listed plant has a new plant\'s fields')
  t.equal(PlantList.maxItems, 1000)
  for (const schema of [Plant, NewPlant]) {
    t.equal(schema.properties.name.maxLength, 1000)
    t.equal(schema.properties.tag.maxLength, 1000)
  }
  t.match(ErrorSchema.properties.error, { minimum: 400, maximum: 599 })
  t.equal(ErrorSchema.properties.message.maxLength, 1000)
})

t.test('every operation has a summary, a description, a unique operationId and a declared tag', async (t) => {
  const { app } = await build(t)
  const doc = await documentOf(app)
  const declared = new Map(doc.tags.map(({ name, description }: { name: string, description: string }) => [name, description]))
  t.same([...declared.keys()].sort(), ['health', 'plants'])
  for (const [name, description] of declared) t.ok(description, `tag ${name} has a description`)
  const ids = new Set<string>()
  for (const { method, path, operation } of operations(doc)) {
    const title = `${method} ${path}`
    t.ok(operation.summary, `${title}: summary`)
    t.ok(operation.description, `${title}: description`)
    t.ok(operation.tags.every((tag: string) => declared.has(tag)), `${title}: its tags are declared`)
    t.notOk(ids.has(operation.operationId), `${title}: operationId ${operation.operationId} is unique`)
    ids.add(operation.operationId)
  }
  t.equal(ids.size, 8)
  t.match(doc.info.description, /rounded/, 'the document warns that Swagger UI rounds ids past 2^53')
})

t.test('every plant route documents its errors, 429 and 500, with the headers the service sends', async (t) => {
  const { app } = await build(t)
  const doc = await documentOf(app)
  const rateLimit = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
  for (const { method, path, operation } of operations(doc)) {
    const title = `${method} ${path}`
    const statuses = Object.keys(operation.responses)
    if (!PLANT_ROUTES.includes(title)) {
      t.ok(statuses.includes('500'), `${title}: 500`)
      continue
    }
    for (const status of ['400', '401', '429', '500', '503']) t.ok(statuses.includes(status), `${title}: ${status}`)
    for (const status of statuses) {
      const { headers = {}, content } = operation.responses[status]
      // Anonymous requests are refused before the rate limit counts them; 5xx are not counted answers.
      const counted = /^[24]/.test(status) && status !== '401'
      t.equal(rateLimit.every((name) => name in headers), counted, `${title} ${status}: rate-limit headers`)
      if (/^[45]/.test(status)) {
        const { schema, examples } = content['application/json']
        t.same(schema, { $ref: '#/components/schemas/Error' }, `${title} ${status}: Error`)
        const values = Object.values(examples).map((example: any) => example.value)
        t.ok(values.length > 0 && values.every(({ error }) => error === Number(status)), `${title} ${status}: examples`)
      }
    }
    t.ok('Retry-After' in operation.responses['429'].headers, `${title}: 429 says when to retry`)
    t.ok('Retry-After' in operation.responses['503'].headers, `${title}: 503 says when to retry`)
    t.ok('WWW-Authenticate' in operation.responses['401'].headers, `${title}: 401 carries the challenge`)
  }
})

t.test('each error example in the document is a message the service really sends, for that route and status', async (t) => {
  const memory = createMemoryStore()
  const failing = (ErrorType: new () => Error): PlantStore => {
    const fail = async () => { throw new ErrorType() }
    // The feed reads the store's outbox: it fails the same way.
    return { ...memory, create: fail, get: fail, list: fail, delete: fail, ping: fail, update: fail, listTagged: fail, openOutbox: async () => ({ readFeed: fail }) } as PlantStore
  }
  const apps = {
    normal: (await build(t, { rateLimit: { max: 1000, timeWindow: 60 * 60_000 } })).app,
    limited: (await build(t, { rateLimit: { max: 1, timeWindow: 60 * 60_000 } })).app,
    throttled: (await build(t, { authFailureLimit: { max: 1, timeWindow: 60 * 60_000 }, rateLimit: { max: 1000, timeWindow: 60_000 } })).app,
    broken: (await build(t, { store: failing(Error) })).app,
    down: (await build(t, { store: failing(StoreUnavailableError) })).app,
    overloaded: (await build(t, { pressure: { maxHeapUsedBytes: 1 } })).app,
    // A host's store with the required methods only: no update, no listTagged.
    host: (await build(t, { store: { create: memory.create, get: memory.get, list: memory.list, delete: memory.delete, ping: memory.ping, close: memory.close } })).app
  }
  const doc = await documentOf(apps.normal)
  await apps.normal.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":1,"name":"n"}' })
  await apps.limited.inject({ url: '/plants', headers: AUTH })
  await apps.throttled.inject({ url: '/plants', headers: { authorization: 'Bearer a-wrong-guess' } })
  // The load-shedding sampler reads the heap once a second: wait for it to shed.
  t.ok(await eventually(async () => (await apps.overloaded.inject({ url: '/plants', headers: AUTH })).statusCode === 503), 'the overloaded app sheds')

  const post = (payload: string, headers: Record<string, string> = AUTH): InjectOptions =>
    ({ method: 'POST', url: '/plants', headers: { ...JSON_TYPE, ...headers }, payload })
  const update = (url: string, payload: string, headers: Record<string, string> = AUTH): InjectOptions =>
    ({ method: 'PUT', url, headers: { ...JSON_TYPE, ...headers }, payload })
  type Request = [keyof typeof apps, InjectOptions]
  const everyRoute = (status: number, app: keyof typeof apps, headers: Record<string, string> = AUTH): Record<string, Request[]> => ({
    [`post /plants ${status}`]: [[app, post('{"id":2,"name":"n"}', headers)]],
    [`get /plants ${status}`]: [[app, { url: '/plants', headers }]],
    [`get /plants/{id} ${status}`]: [[app, { url: '/plants/1', headers }]],
    [`put /plants/{id} ${status}`]: [[app, { method: 'PUT', url: '/plants/1', headers: { ...JSON_TYPE, ...headers }, payload: '{"name":"n"}' }]],
    [`delete /plants/{id} ${status}`]: [[app, { method: 'DELETE', url: '/plants/1', headers }]],
    [`get /plants/changes ${status}`]: [[app, { url: '/plants/changes', headers }]]
  })
  const merge = (...tables: Array<Record<string, Request[]>>) => {
    const merged: Record<string, Request[]> = {}
    for (const table of tables) for (const [key, requests] of Object.entries(table)) merged[key] = [...merged[key] ?? [], ...requests]
    return merged
  }
  // For each route and status: requests whose answers, together, are exactly the documented examples.
  const requests = merge(everyRoute(401, 'normal', {}), everyRoute(429, 'limited'), everyRoute(429, 'throttled', { authorization: 'Bearer a-wrong-guess' }), everyRoute(500, 'broken'),
    everyRoute(503, 'down'), everyRoute(503, 'overloaded'), {
      'post /plants 400': [
        ['normal', post('{"id":"5","name":"n"}')],
        ['normal', post(JSON.stringify({ id: 2, name: 'x'.repeat(1001) }))],
        ['normal', post('{"id":2,"name":"\\u0000"}')],
        ['normal', post('{"id":2,')]
      ],
      'post /plants 409': [['normal', post('{"id":1,"name":"again"}')]],
      'post /plants 413': [['normal', post(JSON.stringify({ id: 2, name: 'n', padding: 'x'.repeat(1024 * 1024) }))]],
      'post /plants 415': [['normal', post('{"id":2,"name":"n"}', { ...AUTH, 'content-type': 'text/plain' })]],
      'get /plants 400': [['normal', { url: '/plants?limit=1e2', headers: AUTH }], ['normal', { url: '/plants?after=x', headers: AUTH }]],
      'get /plants/{id} 400': [['normal', { url: '/plants/x', headers: AUTH }]],
      'get /plants/{id} 404': [['normal', { url: '/plants/2', headers: AUTH }]],
      'delete /plants/{id} 400': [['normal', { method: 'DELETE', url: '/plants/x', headers: AUTH }]],
      'delete /plants/{id} 404': [['normal', { method: 'DELETE', url: '/plants/2', headers: AUTH }]],
      'delete /plants/{id} 412': [['normal', { method: 'DELETE', url: '/plants/1', headers: { ...AUTH, 'if-match': '"x"' } }]],
      'get /plants 501': [['host', { url: '/plants?tag=t', headers: AUTH }]],
      'put /plants/{id} 400': [
        ['normal', update('/plants/x', '{"name":"n"}')],
        ['normal', update('/plants/1', '{"id":2,"name":"n"}')],
        ['normal', update('/plants/1', JSON.stringify({ name: 'x'.repeat(1001) }))],
        ['normal', update('/plants/1', '{"name":"\\u0000"}')],
        ['normal', update('/plants/1', '{"name":')]
      ],
      'put /plants/{id} 404': [['normal', update('/plants/2', '{"name":"n"}')]],
      'put /plants/{id} 412': [['normal', update('/plants/1', '{"name":"n"}', { ...AUTH, 'if-match': '"x"' })]],
      'put /plants/{id} 413': [['normal', update('/plants/1', JSON.stringify({ name: 'n', padding: 'x'.repeat(1024 * 1024) }))]],
      'put /plants/{id} 415': [['normal', update('/plants/1', '{"name":"n"}', { ...AUTH, 'content-type': 'text/plain' })]],
      'put /plants/{id} 501': [['host', update('/plants/1', '{"name":"n"}')]],
      'get /readyz 503': [['down', { url: '/readyz' }]],
      'get /plants/changes 400': [['normal', { url: '/plants/changes?after=x', headers: AUTH }], ['normal', { url: '/plants/changes?limit=0', headers: AUTH }],
        ['normal', { url: '/plants/changes?wait=31', headers: AUTH }]],
      'get /plants/changes 410': [['normal', { url: `/plants/changes?after=${Buffer.from(`${'0'.repeat(36)}.0.0`).toString('base64url')}`, headers: AUTH }]]
    })

  const documented: string[] = []
  for (const { method, path, operation } of operations(doc)) {
    for (const [status, response] of Object.entries<any>(operation.responses)) {
      const examples = response.content?.['application/json']?.examples
      if (examples === undefined) continue
      const key = `${method} ${path} ${status}`
      // The probes have no fault to show their 500 with: it would take a bug.
      if (!['/plants', '/plants/{id}', '/plants/changes'].includes(path) && status === '500') continue
      documented.push(key)
      const sent = []
      for (const [app, options] of requests[key] ?? []) {
        const answer = await apps[app].inject(options)
        t.equal(answer.statusCode, Number(status), `${key}: ${options.url}`)
        // A throttled address is refused before the rate limit counts it: no X-RateLimit-* then.
        const sentHeaders = Object.keys(response.headers ?? {})
          .filter((name) => (name !== 'Retry-After' || status === '429') && !(app === 'throttled' && name.startsWith('X-RateLimit')))
        for (const header of sentHeaders) {
          t.ok(answer.headers[header.toLowerCase()], `${key}: ${header} is sent`)
        }
        sent.push(answer.json())
      }
      t.same(sent, Object.values(examples).map((example: any) => example.value), `${key}: the examples are what is sent`)
    }
  }
  t.same(documented.sort(), Object.keys(requests).sort(), 'every route and status with examples is checked')
})

t.test('the documentation and its document are public', async (t) => {
  const { app } = await build(t)
  for (const url of ['/documentation/json', '/documentation']) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 200, url)
  }
})

t.test('Swagger UI is served with every asset from the service itself', async (t) => {
  const { app } = await build(t)
  const page = await app.inject({ url: '/documentation' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1])
  t.ok(assets.length >= 4, 'the page loads scripts and styles')
  for (const asset of assets) {
    t.match(asset, /^\/documentation\/static\//, `${asset} is local`)
    t.equal((await app.inject({ url: asset })).statusCode, 200, `${asset} is served`)
  }
  const initializer = await app.inject({ url: '/documentation/static/swagger-initializer.js' })
  t.match(initializer.body, /"persistAuthorization":true/, 'Authorize keeps the token across reloads')
  t.match(initializer.body, /validatorUrl: null/, 'no call to the online validator')
})
