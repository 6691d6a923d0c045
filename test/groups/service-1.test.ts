import { runFiles, testFiles } from '../helpers/group.js'

// The service tier is the longest: its files run as two groups, side by side.
const folder = new URL('../service/', import.meta.url)
await runFiles(folder, testFiles(folder, { part: 1, of: 2 }))
