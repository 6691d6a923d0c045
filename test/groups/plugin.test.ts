import { runTier } from '../helpers/group.js'

await runTier('plugin')
