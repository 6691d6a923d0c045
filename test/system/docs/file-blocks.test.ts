import { readFileSync } from 'node:fs'
import t from 'tap'

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')

// A code block right after `<!-- path -->` in README.md is that file of the repository, word for
// word: CI type-checks and runs the files, so the README's examples run as written.
t.test('every code block README.md takes from a file is that file as it is', async (t) => {
  const blocks = [...readme.matchAll(/<!-- ([\w./-]+) -->\n```\w*\n([\s\S]*?)```\n/g)]
  t.ok(blocks.length >= 2, 'README.md shows the host example and the host store')
  for (const [, path, code] of blocks) {
    t.equal(code, readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8'), `${path} as README.md shows it`)
  }
})
