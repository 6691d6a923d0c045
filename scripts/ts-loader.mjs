// Runs the TypeScript sources as they are, for the tests and whatever they start: `node
// --import=./scripts/ts-loader.mjs file.ts`. tap passes it to each test process (.taprc), and the
// processes and worker threads the tests start inherit it.
import { register } from 'node:module'

register('./ts-loader-hooks.mjs', import.meta.url)
