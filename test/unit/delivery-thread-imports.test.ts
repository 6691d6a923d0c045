import t from 'tap'
import { importsReached } from '../helpers/imports-reached.js'

const THREAD_ENTRY = 'plugins/webhooks/thread/thread-entry.ts'

t.test('the delivery thread loads no TypeBox: the option it runs is checked on the API side (options-schema.ts)', async (t) => {
  const { modules, packages } = await importsReached(THREAD_ENTRY, { dynamic: true })
  t.notOk(packages.some((name) => name === 'typebox' || name.startsWith('typebox/')), 'no TypeBox module', { packages })
  t.notOk(modules.includes('plugins/webhooks/options-schema.ts'), 'not the option\'s schema', { modules })
  t.ok(modules.includes('plugins/webhooks/settings.ts'), 'but the settings it decodes with')

  // The check itself: the API side's entry reaches TypeBox through the same walk.
  const api = await importsReached('src/plugin.ts', { dynamic: true })
  t.ok(api.packages.includes('typebox'), 'the plugin\'s entry does reach TypeBox')
  t.ok(api.modules.includes('plugins/webhooks/options-schema.ts'), 'and the option\'s schema')
})
