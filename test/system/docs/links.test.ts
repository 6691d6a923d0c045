import { existsSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import t from 'tap'
import { anchorsOf, PAGES, proseOf, readPage, ROOT } from '../../helpers/docs-pages.js'

const MANUAL = PAGES.filter((page) => page.startsWith('docs/'))

t.test('every relative link of README.md and docs/ reaches a file, and every #anchor a heading there', async (t) => {
  let checked = 0
  for (const page of PAGES) {
    for (const [, target] of proseOf(readPage(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue
      const [path, anchor] = target.split('#')
      const file = path === '' ? page : normalize(join(dirname(page), path))
      t.ok(existsSync(join(ROOT, file)), `${page}: ${target} is a file of the repository`)
      if (anchor !== undefined) t.ok(anchorsOf(readPage(file)).has(anchor), `${page}: ${target} is a heading of ${file}`)
      checked++
    }
  }
  t.ok(checked > 100, `${checked} links checked`)
})

t.test('each page of the manual says what it is for, then links to README and every other page', async (t) => {
  for (const page of MANUAL) {
    const [title, purpose, nav] = readPage(page).split('\n\n')
    t.match(title, /^# \S/, `${page} starts with its title`)
    t.notMatch(purpose, /^[[#`|-]/, `${page}: a sentence on what it is for`)
    t.match(nav, /^\[README\]\(\.\.\/README\.md\)/, `${page}: then its neighbours`)
    for (const other of MANUAL) {
      const link = other === page ? /\*\*[^*]+\*\*/ : `](${other.slice('docs/'.length)})`
      t.match(nav, link, `${page} links to ${other}`)
    }
  }
})

t.test('README.md links to every page of the manual', async (t) => {
  const readme = readPage('README.md')
  for (const page of MANUAL) t.match(readme, `](${page})`, `README.md links to ${page}`)
})
