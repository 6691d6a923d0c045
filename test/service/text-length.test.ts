import { join } from 'node:path'
import t, { type Test } from 'tap'
import { appOptions } from '../../service/config/app-options.js'
import { ConfigError, loadConfig } from '../../service/config/index.js'
import { AUTH, build, createPlant, TOKEN, type App } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const MAX = 1000 // the documented default of MAX_TEXT_LENGTH

const STORES: Array<{ name: string, skip: string | false, url: (t: Test) => Promise<string> }> = [
  { name: 'memory', skip: false, url: async () => 'memory:' },
  { name: 'SQLite', skip: false, url: async (t) => `sqlite:${join(t.testdir(), 'plants.db')}` },
  { name: 'PostgreSQL', skip: await postgresSkip(), url: freshDatabase }
]

const read = async (app: App, id: number) => (await app.inject({ url: `/plants/${id}`, headers: AUTH })).json()

for (const { name, skip, url } of STORES) {
  t.test(`on ${name}, a name or tag of up to ${MAX} characters is kept exactly, a longer one is 400`, { skip }, async (t) => {
    const { app } = await build(t, { store: await url(t) })
    const fits = [
      { id: 1, name: 'a'.repeat(MAX) },
      // Characters, not UTF-16 code units nor bytes: 1000 emoji are 2000 code units, 4000 bytes.
      { id: 2, name: '\u{1f331}'.repeat(MAX), tag: '\u00e9'.repeat(MAX) }
    ]
    for (const plant of fits) {
      t.equal((await createPlant(app, plant)).statusCode, 200, `id ${plant.id}`)
      t.same(await read(app, plant.id), { name: plant.name, ...(plant.tag !== undefined && { tag: plant.tag }) })
    }

    const tooLong = {
      name: { payload: { id: 3, name: 'a'.repeat(MAX + 1) }, message: `body/name must NOT have more than ${MAX} characters` },
      tag: { payload: { id: 3, name: 'n', tag: '\u{1f331}'.repeat(MAX + 1) }, message: `body/tag must NOT have more than ${MAX} characters` }
    }
    for (const [field, { payload, message }] of Object.entries(tooLong)) {
      const response = await createPlant(app, payload)
      t.equal(response.statusCode, 400, field)
      t.same(response.json(), { error: 400, message }, field)
    }
    const missing = await app.inject({ url: '/plants/3', headers: AUTH })
    t.equal(missing.statusCode, 404, 'nothing stored')
  })
}

t.test('MAX_TEXT_LENGTH sets the maximum, and the OpenAPI document declares it', async (t) => {
  const { app } = await build(t, appOptions(loadConfig({ DATABASE_URL: 'memory:', MAX_TEXT_LENGTH: '12' }), [TOKEN]))
  t.equal((await createPlant(app, { id: 1, name: 'x'.repeat(12), tag: 'y'.repeat(12) })).statusCode, 200)
  const refused = await createPlant(app, { id: 2, name: 'x'.repeat(13) })
  t.same(refused.json(), { error: 400, message: 'body/name must NOT have more than 12 characters' })

  const doc = (await app.inject({ url: '/documentation/json' })).json()
  for (const schema of ['Plant', 'NewPlant']) {
    const { name, tag } = doc.components.schemas[schema].properties
    t.equal(name.maxLength, 12, `${schema}.name`)
    t.equal(tag.maxLength, 12, `${schema}.tag`)
  }
})

t.test('MAX_TEXT_LENGTH must be a positive integer', async (t) => {
  for (const value of ['0', '-1', '1.5', 'long']) {
    t.throws(() => loadConfig({ MAX_TEXT_LENGTH: value }), ConfigError, value)
  }
  t.equal(loadConfig({}).MAX_TEXT_LENGTH, MAX)
})
