// `npm test` runs this first. tap builds its Test class for the plugins .taprc names, but the run
// that finds it built for others (as after `npm ci`) still starts every test file with the loaders
// of the old plugins (ts-node): build it before that run. Nothing to do when it is current.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { TapConfig } from '@tapjs/config'

const built = readFileSync(fileURLToPath(import.meta.resolve('@tapjs/test/test-built')), 'utf8')
const signature = /export const signature = `([^`]*)`/.exec(built)?.[1]
const config = await TapConfig.load()
if (signature !== config.pluginSignature) {
  process.stderr.write('tap: building its Test class for the plugins .taprc names\n')
  execFileSync(fileURLToPath(new URL('../node_modules/.bin/tap', import.meta.url)), ['build'], { stdio: 'inherit' })
}
