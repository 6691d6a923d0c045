// `node --import=./test/helpers/typescript-loader.mjs`: runs .ts files (see typescript-hooks.mjs).
import { register } from 'node:module'

register('./typescript-hooks.mjs', import.meta.url)

// tap names this file relative to the project: a child started with process.execArgv from another
// folder (a test may chdir) gets its whole URL.
process.execArgv = process.execArgv.map((arg) => /^--import=.*typescript-loader\.mjs$/.test(arg) ? `--import=${import.meta.url}` : arg)
