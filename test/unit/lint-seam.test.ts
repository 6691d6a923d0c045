import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'
import t from 'tap'

// The repository's own eslint.config.js, as `npx eslint .` loads it.
const eslint = new ESLint({ cwd: fileURLToPath(new URL('../..', import.meta.url)) })
const SEAM_RULES = new Set(['no-restricted-imports', 'no-restricted-syntax'])

/** What the seam says of `code` at `filePath`: the messages of its two rules. */
async function seamMessages (filePath: string, code: string) {
  const [result] = await eslint.lintText(code, { filePath })
  return result.messages.filter(({ ruleId }) => ruleId !== null && SEAM_RULES.has(ruleId)).map(({ message }) => message)
}

const THROUGH_FACES = /import them through a face in src\/ \(plugin\.js, service-api\.js, service-settings\.js, postgres-schema\.js\)/

t.test('service/ importing a module under plugins/ or routes/ fails the lint, pointing at the faces', async (t) => {
  const crossings = {
    'service/x.ts': "import { PlantNotFoundError } from '../plugins/http/errors.js'\nexport const error = new PlantNotFoundError()\n",
    'service/commands/x.ts': "import plantRoutes from '../../routes/plants.js'\nexport const routes = plantRoutes\n",
    'service/entry-points/x.ts': "export type { PlantStore } from '../../plugins/store/index.js'\n",
    'service/observe/x.ts': "export const webhooks = await import('../../plugins/webhooks/index.js')\n",
    'bench/x.ts': "import { messageId } from '../plugins/webhooks/delivery/signing.js'\nexport const id = messageId()\n",
    'scripts/x.mjs': "export { openapiNames } from '../routes/openapi/names.js'\n"
  }
  for (const [filePath, code] of Object.entries(crossings)) {
    const messages = await seamMessages(filePath, code)
    t.equal(messages.length, 1, `${filePath}: one crossing, one error`, { messages })
    t.match(messages[0], THROUGH_FACES, `${filePath}: the error says which door to use`)
  }
})

t.test('an import through src/service-api.js, of schemas/, or from inside the plugin or a test passes', async (t) => {
  const allowed = {
    'service/x.ts': "import { plantStore } from '../src/service-api.js'\nexport const plugin = plantStore\n",
    'service/commands/x.ts': "export { createTableSql } from '../../src/postgres-schema.js'\n",
    'service/config/x.ts': "export { parseDuration } from '../../src/service-settings.js'\n",
    'bench/x.ts': "import plantStore from '../src/plugin.js'\nexport const plugin = plantStore\n",
    'client/x.ts': "export type { Plant } from '../schemas/index.js'\n",
    'service/y.ts': "export { pluginsOf } from './plugins-of.js'\n",
    'routes/x.ts': "export { storeOf } from '../plugins/store/index.js'\n",
    'src/x.ts': "export { default as plantRoutes } from '../routes/plants.js'\n",
    'test/plugin/x.ts': "export { storeOf } from '../../plugins/store/index.js'\n"
  }
  for (const [filePath, code] of Object.entries(allowed)) {
    t.same(await seamMessages(filePath, code), [], `${filePath} passes`)
  }
})
