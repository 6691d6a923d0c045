import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import { codeBlocks, PAGES, ROOT, shellCommands } from '../../helpers/docs-pages.js'

// The shell blocks of README.md and docs/ run where the reader is: a clone (npm scripts, dist/ once
// built), the runtime folder (node server.mjs) or a container. What they name must exist there.

// The runtime folder's start command, as scripts/runtime.mjs writes it (plain JavaScript, without types).
const { START_COMMAND } = await import(`${ROOT}scripts/runtime-packages.mjs`) as { START_COMMAND: string[] }
const scripts = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).scripts as Record<string, string>
const NPM_OWN = new Set(['install', 'ci', 'pack', 'install-scripts'])

/** The simple commands of a line, each without the variables set before it. */
const simpleCommands = (line: string) => line.split(/&&|\|\||[|;]|\$\(|\)/)
  .map((part) => part.trim().replace(/^(export\s+)?(\w+=("[^"]*"|'[^']*'|\S*)\s*)+/, '').trim())
  .filter((part) => part !== '')

t.test('every npm script and file a shell block of the manual runs is there', async (t) => {
  const named = { scripts: 0, files: 0 }
  for (const page of PAGES) {
    for (const { line, code } of codeBlocks(page).filter(({ lang }) => lang === 'sh')) {
      for (const command of shellCommands(code).flatMap(simpleCommands)) {
        const [program, first, second] = command.split(/\s+/)
        const where = `${page}:${line}: ${command}`
        if (program === 'npm' && first === 'run') {
          t.ok(second in scripts, `${where}: package.json has the script ${second}`)
          named.scripts++
        } else if (program === 'npm') {
          t.ok(NPM_OWN.has(first) || first in scripts, `${where}: npm ${first} is npm's own or a script of package.json`)
          named.scripts++
        } else if (program === 'node' && first !== '-e') {
          // The runtime folder's file is its start command's; the others are the clone's (dist/ once built).
          t.ok(first === START_COMMAND[1] || existsSync(`${ROOT}${first}`), `${where}: ${first} is there`)
          named.files++
        } else if ((program === 'npx' && first === 'tap') || (program === 'docker' && first === 'build')) {
          const file = command.split(/\s+/).find((word) => /\.(ts|mjs|js)$|Containerfile$/.test(word))!
          t.ok(existsSync(`${ROOT}${file}`), `${where}: ${file} is there`)
          named.files++
        }
      }
    }
  }
  t.ok(named.scripts >= 20 && named.files >= 10, `${named.scripts} npm commands and ${named.files} files named`)
})
