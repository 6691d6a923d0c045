import { runTier } from '../helpers/group.js'

// The webhook tier is the second longest: its files run as two groups, side by side with the others.
await runTier('webhooks', { part: 1, of: 2 })
