import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../app.js'
import { appOptions } from '../config/app-options.js'
import { loadConfig } from '../config/index.js'

/** The OpenAPI document, generated from the schemas the routes run with, as the file holds it. */
export async function openapiText (): Promise<string> {
  const app = await buildApp(appOptions(loadConfig({ DATABASE_URL: 'memory:' }), ['unused']))
  try {
    return `${JSON.stringify(app.swagger(), null, 2)}\n`
  } finally {
    await app.close()
  }
}

// `npm run openapi` writes the document to the path given (openapi.json at the top of the repository).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const target = resolve(process.argv[2])
  writeFileSync(target, await openapiText())
  process.stdout.write(`wrote ${target}\n`)
}
