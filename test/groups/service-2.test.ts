import { runTier } from '../helpers/group.js'

// The service tier is the longest: its files run as three groups, side by side with the others.
await runTier('service', { part: 2, of: 3 })
