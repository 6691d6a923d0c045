/**
 * The listeners that keep SIGUSR1 from opening Node's inspector (the real signal to a
 * real process is in inspector-signal.test.ts): each signal is one line, in the app's log once it
 * exists, on stderr before.
 */
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import { IGNORED_SIGNALS, ignoreSignals } from '../../service/entry-points/ignored-signals.js'

t.test('each ignored signal is one line: on stderr before the log exists, in the log after', async (t) => {
  const before = IGNORED_SIGNALS.map((signal) => process.listeners(signal))
  t.teardown(() => IGNORED_SIGNALS.forEach((signal, i) => {
    process.removeAllListeners(signal)
    for (const listener of before[i]) process.on(signal, listener)
  }))
  const logged: unknown[] = []
  const app: { log?: FastifyBaseLogger } = {}
  ignoreSignals(() => app.log)

  const written: string[] = []
  const write = process.stderr.write
  process.stderr.write = ((chunk: string) => { written.push(chunk); return true }) as typeof process.stderr.write
  try {
    process.emit('SIGUSR1', 'SIGUSR1')
  } finally {
    process.stderr.write = write
  }
  t.same(written, ['SIGUSR1 ignored: start node with --inspect to debug\n'])

  app.log = { info: (...args: unknown[]) => logged.push(args) } as unknown as FastifyBaseLogger
  process.emit('SIGUSR2', 'SIGUSR2')
  t.same(logged, [[{ signal: 'SIGUSR2' }, 'SIGUSR2 ignored: start node with --inspect to debug']])
})
