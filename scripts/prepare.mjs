// The prepare script: npm runs it when the package is packed, installed from a git URL or from a
// folder, and after `npm install` here. It builds dist/, which the package ships. A folder that
// was never installed has no TypeScript to build with: its devDependencies are installed first
// (without install scripts: the build needs none), as npm itself does for a git URL.
import { execSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const run = (command) => execSync(command, { cwd: root, stdio: 'inherit' })

if (!existsSync(resolve(root, 'node_modules/typescript'))) {
  process.stderr.write('plant-store: installing the packages its build needs\n')
  run('npm install --include=dev --ignore-scripts --no-audit --no-fund --loglevel=error')
}
run('npm run build')
