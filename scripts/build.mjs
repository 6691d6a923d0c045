// `npm run build`: compiles the TypeScript to dist/, bundles the server entry into dist/server.mjs,
// and records what it was built from (scripts/build-stamp.mjs).
import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, sourceDigest, writeStamp } from './build-stamp.mjs'

// Taken before the build: a source edited while it runs makes the next start build again.
const digest = sourceDigest()
const run = (...args) => execFileSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' })

rmSync(join(ROOT, 'dist'), { recursive: true, force: true })
run(join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json')
run('scripts/bundle.mjs')
writeStamp(digest)
