// What a build of dist/ was made from: a digest of every input of `npm run build`, kept in
// dist/.build-stamp, so that `npm start` rebuilds only when one of them changed.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dirname, '..')
const STAMP = join(ROOT, 'dist/.build-stamp')

/** The folders tsconfig.build.json compiles (it is JSON with comments: those lines are dropped). */
function compiledFolders () {
  const text = readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')
  return JSON.parse(text).include
}

function filesUnder (path) {
  if (!existsSync(path)) return []
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
}

/** A digest of the sources, the compiler and bundler settings, the installed versions. */
export function sourceDigest () {
  const inputs = [
    ...compiledFolders().flatMap((folder) => filesUnder(join(ROOT, folder))),
    ...['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/bundle.mjs', 'scripts/runtime-packages.mjs']
      .map((file) => join(ROOT, file))
  ].sort()
  const hash = createHash('sha256')
  for (const file of inputs) hash.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0')
  return hash.digest('hex')
}

export function isBuildCurrent (digest = sourceDigest()) {
  return existsSync(join(ROOT, 'dist/server.mjs')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest
}

export function writeStamp (digest) {
  writeFileSync(STAMP, digest)
}
