import t from 'tap'
import { importsReached } from '../helpers/imports-reached.js'

const SERVER_ENTRY = 'service/entry-points/server.ts'

t.test('the server entry reads every setting before it loads the app: a refused one loads no Fastify, store or plugin', async (t) => {
  const { modules, packages } = await importsReached(SERVER_ENTRY)
  t.notOk(packages.some((name) => name === 'fastify' || name.startsWith('@fastify/')), 'no Fastify package', { packages })
  t.notOk(packages.some((name) => ['better-sqlite3', 'pg'].includes(name)), 'no store driver', { packages })
  t.notOk(modules.some((path) => path === 'src/plugin.ts' || path === 'src/service-api.ts' || path === 'service/app.ts'), 'neither the plugin nor the app', { modules })
  t.ok(modules.includes('service/config/app-options.ts'), 'but what checks the settings the app is built with')

  const all = await importsReached(SERVER_ENTRY, { dynamic: true })
  t.ok(all.modules.includes('service/app.ts') && all.packages.includes('fastify'), 'the app is loaded once they hold')
})
