import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** A module of OpenTelemetry's (or @fastify/otel) loaded from node_modules. */
const OPENTELEMETRY = '[\\\\/]node_modules[\\\\/](@opentelemetry|@fastify[\\\\/]otel)[\\\\/]'

// Node's module hooks (their own thread): each ES module resolved under OPENTELEMETRY is noted.
const HOOKS = `import { appendFileSync } from 'node:fs'
export async function resolve (specifier, context, next) {
  const resolved = await next(specifier, context)
  if (new RegExp(${JSON.stringify(OPENTELEMETRY)}).test(resolved.url)) appendFileSync(process.env.LOADED_MODULES_FILE, resolved.url + '\\n')
  return resolved
}`

// Preloaded with --import: registers the hooks, and at exit notes the CommonJS modules loaded.
const PRELOAD = `import { appendFileSync } from 'node:fs'
import { createRequire, register } from 'node:module'
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)})
const cache = createRequire(process.cwd() + '/').cache
process.on('exit', () => {
  for (const path of Object.keys(cache)) if (new RegExp(${JSON.stringify(OPENTELEMETRY)}).test(path)) appendFileSync(process.env.LOADED_MODULES_FILE, path + '\\n')
})`

/**
 * What a server process loads of OpenTelemetry: node arguments and a variable to start it with,
 * and the modules it loaded, read once it has exited.
 */
export function openTelemetryLoads (folder: string) {
  const file = join(folder, 'loaded-modules.txt')
  return {
    nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(PRELOAD)}`],
    env: { LOADED_MODULES_FILE: file },
    loaded: (): string[] => existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
  }
}
