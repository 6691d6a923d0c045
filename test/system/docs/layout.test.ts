import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

t.test('the Layout of docs/development.md names every top-level folder of the repository, and only those', async (t) => {
  const page = readFileSync(`${ROOT}/docs/development.md`, 'utf8')
  const block = /^## Layout\n[\s\S]*?```\n([\s\S]*?)```/m.exec(page)![1]!
  const named = block.split('\n').map((line) => /^([a-z][\w-]*)\/\s/.exec(line)?.[1]).filter((name) => name !== undefined)
  const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
  const folders = [...new Set(tracked.filter((path) => path.includes('/') && !path.startsWith('.')).map((path) => path.split('/')[0]!))]
  t.same(named.sort(), folders.sort())
})
