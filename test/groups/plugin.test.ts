import { runFiles, testFiles } from '../helpers/group.js'

const folder = new URL('../plugin/', import.meta.url)
await runFiles(folder, testFiles(folder))
