import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import pg from 'pg'
import plantStore from 'plant-store'
import { JSON_BODY, newDatabase, TOKEN } from './helpers.js'

test('17.3 and 17.4: on the host\'s own pg.Pool, a host table named plants is refused, a table of its own works, the pool outlives the plugin', async (t) => {
  const url = await newDatabase(t)
  if (url === undefined) return
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  t.after(() => pool.end())
  pool.on('error', () => {})
  await pool.query('CREATE TABLE plants (sku text PRIMARY KEY, price numeric)')

  const clashing = Fastify()
  await assert.rejects(async () => {
    await clashing.register(plantStore, { tokens: [TOKEN], store: pool })
    await clashing.ready()
  }, /plant-store: the PostgreSQL table public\.plants is not one plant-store can use.*postgres\.schema or postgres\.table option/)
  await clashing.close()

  const app = Fastify()
  await app.register(plantStore, { tokens: [TOKEN], store: pool, postgres: { schema: 'garden' } })
  const created = await app.inject({ method: 'POST', url: '/plants', headers: JSON_BODY, payload: '{"id":9007199254740993,"name":"Ivy"}' })
  assert.equal(created.statusCode, 200, created.body)
  await app.close()

  // The plugin closed its store, not the host's pool, and wrote nothing outside its schema.
  assert.deepEqual((await pool.query('SELECT id::text, name FROM garden.plants')).rows, [{ id: '9007199254740993', name: 'Ivy' }])
  const tables = (await pool.query<{ t: string }>("SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_schema IN ('public', 'garden') ORDER BY 1")).rows.map(({ t }) => t)
  assert.deepEqual(tables.filter((t) => t.startsWith('public.')), ['public.plants'], 'nothing of its own in the host\'s schema')
  // Its table, its version, and the event tables the change feed (on by default) writes to.
  assert.deepEqual(tables.filter((t) => t.startsWith('garden.')), ['garden.plants', 'garden.plants_schema_version', 'garden.plants_webhook_attempts',
    'garden.plants_webhook_deliveries', 'garden.plants_webhook_endpoints', 'garden.plants_webhook_events', 'garden.plants_webhook_feed'])
})
