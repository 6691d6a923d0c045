import { runTier } from '../helpers/group.js'

// The store tier (three engines, PostgreSQL's faults and the feed's order): its files run as two groups.
await runTier('stores', { part: 1, of: 2 })
