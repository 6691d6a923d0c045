import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'

const ROOT = new URL('../../../', import.meta.url)
const PAGES = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]

// A code block right after `<!-- path -->` in README.md or a page of docs/ is that file of the
// repository, word for word: CI type-checks and runs the files, so the examples run as written.
t.test('every code block README.md or docs/ takes from a file is that file as it is', async (t) => {
  const blocks = PAGES.flatMap((page) => [...readFileSync(new URL(page, ROOT), 'utf8').matchAll(/<!-- ([\w./-]+) -->\n```\w*\n([\s\S]*?)```\n/g)]
    .map(([, path, code]) => ({ page, path, code })))
  t.ok(blocks.length >= 3, 'the manual shows the host example, the host store and its contract')
  for (const { page, path, code } of blocks) {
    t.equal(code, readFileSync(new URL(path, ROOT), 'utf8'), `${path} as ${page} shows it`)
  }
})
