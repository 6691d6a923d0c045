import { ConfigSchema } from './index.js'

/** The NODE_ENV values people mean; any other is almost always a typo of one of them. */
const NODE_ENVS = ['production', 'development', 'test'] as const

/** The variables the service reads: the one config schema names them. */
const KNOWN = Object.keys(ConfigSchema.properties)

/** The edit distance (insertions, deletions, substitutions) between two strings. */
function distance (a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_unused, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

/**
 * OpenTelemetry's standard names differ from the ones the service reads by a signal
 * (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, ..._LOGS_PROTOCOL), set for other services: among them only
 * one edit is taken for a typo.
 */
const OTEL = 'OTEL_'

/**
 * How far a name may be from a known one and still be taken for a typo of it: one edit in a short
 * name (HOST, PORT), one more per six characters; none but case in a name of three letters (API),
 * one edit from too many others (APP). Wider would flag the system's own variables (HOME, PATH are
 * two edits from HOST, PORT).
 */
const closeEnough = (name: string, known: string) =>
  distance(name, known) <= (known.startsWith(OTEL) ? 1 : Math.max(known.length > 3 ? 1 : 0, Math.floor(known.length / 6)))

/** The known name a variable probably meant to be, if it is a near miss of exactly one. */
function meant (name: string): string | undefined {
  const upper = name.toUpperCase()
  if (KNOWN.includes(name)) return undefined
  const candidates = KNOWN.filter((known) => upper === known || closeEnough(upper, known))
  return candidates.length === 1 ? candidates[0] : undefined
}

/**
 * One line for each setting that is silently without effect: a variable whose name is a near miss
 * of a known one (DATABASE_URI), a NODE_ENV that is not one of the values anything checks.
 */
export function configHints (env: NodeJS.ProcessEnv): string[] {
  const hints: string[] = []
  for (const name of Object.keys(env)) {
    const known = meant(name)
    if (known !== undefined && env[known] === undefined) hints.push(`${name} is not a setting and is ignored: did you mean ${known}?`)
  }
  const mode = env.NODE_ENV
  if (mode !== undefined && !(NODE_ENVS as readonly string[]).includes(mode)) {
    const near = NODE_ENVS.find((value) => value.startsWith(mode.toLowerCase()) || closeEnough(mode.toLowerCase(), value))
    hints.push(`NODE_ENV=${mode} is none of ${NODE_ENVS.join(', ')} and counts as not production${near === undefined ? '' : `: did you mean NODE_ENV=${near}?`}`)
  }
  return hints
}
