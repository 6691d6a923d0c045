import { runFiles, testFiles } from '../helpers/group.js'

const folder = new URL('../stores/', import.meta.url)
await runFiles(folder, testFiles(folder))
