import type { FastifyBaseLogger } from 'fastify'

/**
 * Node opens its inspector on 127.0.0.1:9229 at SIGUSR1, where any local user could then read
 * the process's memory, tokens included; SIGUSR2's default action ends the process. Heard here,
 * neither does anything but a log line: a debugging session is an opt-in (`node --inspect`).
 */
export const IGNORED_SIGNALS = ['SIGUSR1', 'SIGUSR2'] as const

/** Listens to IGNORED_SIGNALS: one line each, in the app's log once `logOf` gives it, else on stderr. */
export function ignoreSignals (logOf: () => FastifyBaseLogger | undefined): void {
  for (const signal of IGNORED_SIGNALS) {
    process.on(signal, () => {
      const line = `${signal} ignored: start node with --inspect to debug`
      const log = logOf()
      if (log === undefined) process.stderr.write(`${line}\n`)
      else log.info({ signal }, line)
    })
  }
}
