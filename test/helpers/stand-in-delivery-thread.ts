import { parentPort, resourceLimits, workerData } from 'node:worker_threads'
import { systemClock } from '../../plugins/http/clock.js'
import { listen } from '../../plugins/webhooks/thread/doorbell.js'
import type { FromThread, ThreadData, ToThread } from '../../plugins/webhooks/thread/messages.js'

/** How each stand-in behaves once it has told its attempts and log line. */
export type StandInMode = 'throw' | 'deaf' | 'obedient' | 'mute' | 'exit' | 'fill'

/**
 * A stand-in for plugins/webhooks/thread/thread-entry.ts that DeliveryThread starts in the tests: it
 * says it is up (but `mode: 'mute'`) and what its resourceLimits are, tells two attempts (in one message) and one log line, then
 * throws (`mode: 'throw'`), exits with code 3 (`mode: 'exit'`), fills its heap until it is ended
 * (`mode: 'fill'`), or keeps running and ignores a stop (`mode: 'deaf'`), or stops when asked
 * (`mode: 'obedient'`, `mode: 'mute'`). It logs each wake-up the bell brings.
 */
const { mode, bell } = workerData as ThreadData & { mode: StandInMode }
const port = parentPort!
const post = (message: FromThread) => port.postMessage(message)
// Listening before it says it started: a ring the host sends once it reads that is not missed.
listen(bell, () => post({ kind: 'log', level: 'info', object: {}, message: 'stand-in rung' }), 10, systemClock)
post({ kind: 'log', level: 'info', object: { threadMode: mode, resourceLimits }, message: 'stand-in started' })
if (mode !== 'mute') post({ kind: 'up' })
post({ kind: 'attempts', attempts: [['e0', 'success', Float64Array.of(0.01, 0.02)]] })
if (mode === 'throw') setTimeout(() => { throw new Error('the stand-in failed') }, 10)
if (mode === 'exit') setTimeout(() => process.exit(3), 10)
// Many small objects, as a leak makes them: the engine ends the thread at its heap limit.
const kept: object[] = []
if (mode === 'fill') setTimeout(() => { for (let i = 0; ; i++) kept.push({ i, name: `plant ${i}` }) }, 10)
port.on('message', (message: ToThread) => {
  post({ kind: 'log', level: 'warn', object: { received: message.kind }, message: 'stand-in told' })
  if (message.kind === 'stop' && (mode === 'obedient' || mode === 'mute')) process.exit(0)
})
