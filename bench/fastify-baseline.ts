// The second baseline: what Fastify itself costs for POST /plants. A plain Fastify app with
// @fastify/bearer-auth and the service's own TypeBox schemas, with Fastify's defaults (its Ajv,
// JSON.parse, no logger) and no other plugin, storing nothing. Run as its own process: PORT, TOKEN.
import bearerAuth from '@fastify/bearer-auth'
import Fastify, { type FastifyError } from 'fastify'
import { ErrorSchema, NewPlantSchema, PlantSchema, ref, sharedSchemas } from '../schemas/index.js'

const app = Fastify()
for (const schema of sharedSchemas()) app.addSchema(schema)

// The service's Error shape, so both answer the same bytes on every path.
app.setErrorHandler((error: FastifyError, _request, reply) => {
  const status = error.statusCode ?? 500
  reply.code(status).send({ error: status, message: error.message })
})

app.get('/healthz', async () => ({ status: 'ok' }))
app.get('/readyz', async () => ({ status: 'ok' }))

await app.register(async (scope) => {
  await scope.register(bearerAuth, {
    keys: [process.env.TOKEN ?? ''],
    // bearer-auth's types want `error` to be a string; the Error shape's is the status.
    errorResponse: ((error: Error) => ({ error: 401, message: error.message })) as unknown as (error: Error) => { error: string }
  })
  scope.post('/plants', {
    schema: {
      body: ref(NewPlantSchema),
      response: { 200: ref(PlantSchema), 400: ref(ErrorSchema), 401: ref(ErrorSchema) }
    }
  }, async (request) => {
    const { name, tag } = request.body as { name: string, tag?: string }
    return tag === undefined ? { name } : { name, tag }
  })
})

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 3000) })
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
}
