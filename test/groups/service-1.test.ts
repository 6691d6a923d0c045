import { runTier } from '../helpers/group.js'

// The service tier is the longest: its files run as two groups, side by side.
await runTier('service', { part: 1, of: 2 })
