import { runTier } from '../helpers/group.js'

// No Fastify at all: pure parts (schedule, signing, SSRF, parsing, clocks) on the fake clock.
await runTier('unit')
