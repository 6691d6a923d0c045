import { closeSync, openSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { pathNow } from '../../plugins/store/sqlite/moved.js'

// pathNow finds where a file this process holds open is now, through /proc/self/fd.
const folder = t.testdir()

/** A new file in the folder, held open by this process until the test ends: its path and stat. */
function heldOpen (t: Test, name: string) {
  const path = join(folder, name)
  writeFileSync(path, 'x')
  const fd = openSync(path, 'r')
  t.teardown(() => closeSync(fd))
  return { path, opened: statSync(path) }
}

t.test('a file held open and renamed is found at its new path', async (t) => {
  const { path: before, opened } = heldOpen(t, 'p.db')
  t.equal(pathNow(opened), before, 'where it was opened')
  const after = join(folder, 'p.db.bak')
  renameSync(before, after)
  t.equal(pathNow(opened), after, 'where the operator moved it')
})

t.test('a file held open and removed has no path', async (t) => {
  const { path, opened } = heldOpen(t, 'gone.db')
  unlinkSync(path)
  t.equal(pathNow(opened), undefined)
})

t.test('a file this process does not hold open has no path it could name', async (t) => {
  const path = join(folder, 'closed.db')
  writeFileSync(path, 'x')
  t.equal(pathNow(statSync(path)), undefined)
})
