import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type Bindings = Parameters<FastifyBaseLogger['child']>[0]
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
const LEVELS: readonly Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace']

/** pino's check, when the logger has one; any other logger is asked to log everything. */
function isLevelEnabled (logger: FastifyBaseLogger, level: Level): boolean {
  const { isLevelEnabled } = logger as { isLevelEnabled?: (level: Level) => boolean }
  return isLevelEnabled === undefined || isLevelEnabled.call(logger, level)
}

/**
 * A request's logger that becomes a real child of the app's logger (bound to the request id) on
 * its first line at an enabled level. At info a request answered or refused logs nothing, so the
 * child Fastify builds for every request was work and garbage for nothing.
 */
class LazyChildLogger {
  declare fatal: FastifyBaseLogger['fatal']
  declare error: FastifyBaseLogger['error']
  declare warn: FastifyBaseLogger['warn']
  declare info: FastifyBaseLogger['info']
  declare debug: FastifyBaseLogger['debug']
  declare trace: FastifyBaseLogger['trace']
  private built: FastifyBaseLogger | undefined

  constructor (private readonly parent: FastifyBaseLogger, private readonly bindings: Bindings) {}

  /** One line at `level`: nothing to build when the app's logger would drop it. */
  write (level: Level, args: Parameters<FastifyBaseLogger['info']>): void {
    if (this.built !== undefined || isLevelEnabled(this.parent, level)) this.logger[level](...args)
  }

  /** The real child, built on first use. */
  get logger (): FastifyBaseLogger {
    this.built ??= this.parent.child(this.bindings)
    return this.built
  }

  get level (): string {
    return (this.built ?? this.parent).level
  }

  set level (level: string) {
    this.logger.level = level
  }

  silent (): void {}

  child (bindings: Bindings, options?: Parameters<FastifyBaseLogger['child']>[1]): FastifyBaseLogger {
    return this.logger.child(bindings, options)
  }
}

for (const level of LEVELS) {
  LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...args: Parameters<FastifyBaseLogger['info']>) {
    this.write(level, args)
  }
}

/** Fastify's childLoggerFactory: the lazy child, unless the route sets its own level or serializers. */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  options.level === undefined && options.serializers === undefined
    ? new LazyChildLogger(logger, bindings)
    : logger.child(bindings, options)
