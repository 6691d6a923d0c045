// Medians over rounds, ratios, the table on stdout and the JSON file of a run.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** A new plant with a small id, one with a 64-bit id, a body the schema refuses, no token, a page of the list, a stored plant replaced. */
export type Path = 'create' | 'create64' | 'invalid' | 'anonymous' | 'list' | 'update'
export const PATHS: readonly Path[] = ['create', 'create64', 'invalid', 'anonymous', 'list', 'update']

/** The status every response of a run on that path should have. */
export const EXPECTED_STATUS: Record<Path, number> = { create: 200, create64: 200, invalid: 400, anonymous: 401, list: 200, update: 200 }

/** The two baselines every target is compared with: a bare node:http server and plain Fastify. */
export const BASELINES = ['node:http', 'fastify'] as const
export type Baseline = typeof BASELINES[number]

/** One measured run: one target, one path, one round. Null where a figure does not apply. */
export interface Run {
  target: string
  path: Path
  round: number
  seconds: number
  requests: number
  reqPerSec: number
  p50Ms: number | null
  p99Ms: number | null
  cpuUsPerRequest: number | null
  peakRssMiB: number | null
  non2xx: number
  /** Responses whose status is not the one expected on the path. */
  unexpected: number
  /** Connection errors and timeouts. */
  errors: number
  statusCodes: Record<string, number>
  /** Figures of this kind of run only (pgbench's average latency). */
  details?: Record<string, number>
}

const METRICS = [
  'reqPerSec', 'p50Ms', 'p99Ms', 'cpuUsPerRequest', 'peakRssMiB', 'non2xx', 'unexpected', 'errors'
] as const
type Metric = typeof METRICS[number]

type Ratios = Record<'reqPerSec' | 'cpuUsPerRequest' | 'p99Ms' | 'peakRssMiB', number | null>

export type Summary = { target: string, path: Path, rounds: number } & Record<Metric, number | null> & {
  /** This target's figures divided by each baseline's on the same path. */
  vs: Partial<Record<Baseline, Ratios>>
}

export interface Comparison { label: string, path: Path, reqPerSec: number | null, p50Ms: number | null, cpuUsPerRequest: number | null }

export function median (values: (number | null)[]): number | null {
  const sorted = values.filter((value): value is number => value !== null && Number.isFinite(value))
    .sort((a, b) => a - b)
  if (sorted.length === 0) return null
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** The nearest-rank percentile of some values, in their unit; null when there are none. */
export function percentile (values: number[], p: number): number | null {
  if (values.length === 0) return null
  const sorted = Float64Array.from(values).sort()
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

export function ratio (a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b
}

/** Medians per target and path, in the order the runs first appear, with ratios to the baseline. */
export function summarize (runs: Run[]): Summary[] {
  const groups = new Map<string, Run[]>()
  for (const run of runs) {
    const key = `${run.target} ${run.path}`
    groups.set(key, [...groups.get(key) ?? [], run])
  }
  const summaries: Summary[] = [...groups.values()].map((group) => ({
    target: group[0].target,
    path: group[0].path,
    rounds: group.length,
    ...Object.fromEntries(METRICS.map((metric) => [metric, median(group.map((run) => run[metric]))])) as Record<Metric, number | null>,
    vs: {}
  }))
  for (const summary of summaries) {
    // pgbench's SQL INSERT is no HTTP request: it compares to the PostgreSQL targets only.
    if (summary.target === 'pgbench') continue
    for (const baseline of BASELINES) {
      const base = summaries.find(({ target, path }) => target === baseline && path === summary.path)
      if (base === undefined || base === summary) continue
      summary.vs[baseline] = {
        reqPerSec: ratio(summary.reqPerSec, base.reqPerSec),
        cpuUsPerRequest: ratio(summary.cpuUsPerRequest, base.cpuUsPerRequest),
        p99Ms: ratio(summary.p99Ms, base.p99Ms),
        peakRssMiB: ratio(summary.peakRssMiB, base.peakRssMiB)
      }
    }
  }
  return summaries
}

/**
 * The median req/s, p50 and CPU per request on `path` of `numerator` over those of `denominator`
 * on `denominatorPath` (by default the same path), when both ran.
 */
export function compare (summaries: Summary[], numerator: string, denominator: string, path: Path = 'create', denominatorPath = path): Comparison | undefined {
  const find = (target: string, on: Path) => summaries.find((summary) => summary.target === target && summary.path === on)
  const [top, bottom] = [find(numerator, path), find(denominator, denominatorPath)]
  if (top === undefined || bottom === undefined) return undefined
  const label = path === denominatorPath ? `${numerator} / ${denominator}` : `${numerator} ${PATH_LABEL[path]} / ${denominator} ${PATH_LABEL[denominatorPath]}`
  return {
    label,
    path,
    reqPerSec: ratio(top.reqPerSec, bottom.reqPerSec),
    p50Ms: ratio(top.p50Ms, bottom.p50Ms),
    cpuUsPerRequest: ratio(top.cpuUsPerRequest, bottom.cpuUsPerRequest)
  }
}

function format (value: number | null | undefined, digits = 0): string {
  return value === null || value === undefined ? '-' : value.toFixed(digits)
}

export const PATH_LABEL: Record<Path, string> = {
  create: 'POST 200', create64: 'POST 200 int64', invalid: 'POST 400', anonymous: 'POST 401', list: 'GET page', update: 'PUT 200'
}

export interface TableInput {
  summaries: Summary[]
  comparisons: Comparison[]
  startupMs: number[]
  notes: string[]
}

// The service's targets against plain Fastify (CPU, req/s, p99 and memory per path), checked on every run.
const SERVICE_TARGETS = ['memory', 'sqlite']
const LIMITS: Array<{ path: Path, ratio: keyof Ratios, limit: number, atLeast?: true }> = [
  { path: 'create', ratio: 'cpuUsPerRequest', limit: 1.15 },
  { path: 'create', ratio: 'reqPerSec', limit: 0.85, atLeast: true },
  { path: 'create', ratio: 'p99Ms', limit: 1.25 },
  { path: 'create', ratio: 'peakRssMiB', limit: 1.3 },
  { path: 'create64', ratio: 'cpuUsPerRequest', limit: 1.15 },
  { path: 'invalid', ratio: 'cpuUsPerRequest', limit: 1.15 },
  { path: 'anonymous', ratio: 'cpuUsPerRequest', limit: 1.15 }
]
export const STARTUP_LIMIT_MS = 400
// Targets between two of the run's own figures: a store with many plants against the same store
// empty, PostgreSQL against pgbench.
const COMPARISON_LIMITS: Array<{ label: RegExp, path: Path, ratio: 'reqPerSec' | 'p50Ms' | 'cpuUsPerRequest', limit: number, atLeast?: true }> = [
  { label: /^sqlite\+\S+ \/ sqlite$/, path: 'create', ratio: 'reqPerSec', limit: 0.9, atLeast: true },
  // "Flat in store size": a page takes at most a quarter longer with the plants preloaded.
  { label: /^(sqlite|postgres)\+\S+ \/ \1$/, path: 'list', ratio: 'p50Ms', limit: 1.25 },
  { label: /^postgres(\+\S+)? \/ pgbench$/, path: 'create', ratio: 'reqPerSec', limit: 0.8, atLeast: true },
  // The change feed's event, written in each create's commit, costs at most a tenth more CPU than no feed.
  { label: /^(sqlite|postgres) \/ \1 \(feed off\)$/, path: 'create', ratio: 'cpuUsPerRequest', limit: 1.1 },
  // An update costs about what a create does, on each store.
  { label: /^(\S+) PUT 200 \/ \1 POST 200$/, path: 'update', ratio: 'cpuUsPerRequest', limit: 1.15 }
]

/** One line per target (LIMITS, COMPARISON_LIMITS, STARTUP_LIMIT_MS) that this run measured: the figure, the limit, met or missed. */
export function verdicts (summaries: Summary[], startupMs: number[], comparisons: Comparison[] = []): string[] {
  const lines: string[] = []
  for (const { label, path, ratio: key, limit, atLeast } of COMPARISON_LIMITS) {
    for (const comparison of comparisons.filter((c) => label.test(c.label) && c.path === path)) {
      const value = comparison[key]
      if (value === null) {
        lines.push(`?      ${comparison.label} ${PATH_LABEL[path]} ${key}: not measured`)
        continue
      }
      const met = atLeast ? value >= limit : value <= limit
      lines.push(`${met ? 'met   ' : 'MISSED'} ${comparison.label} ${PATH_LABEL[path]} ${key} ${value.toFixed(2)} (${atLeast ? '≥' : '≤'} ${limit})`)
    }
  }
  for (const { path, ratio: key, limit, atLeast } of LIMITS) {
    for (const s of summaries.filter(({ target, path: p }) => SERVICE_TARGETS.includes(target) && p === path)) {
      const value = s.vs.fastify?.[key]
      if (value === undefined || value === null) continue
      const met = atLeast ? value >= limit : value <= limit
      lines.push(`${met ? 'met   ' : 'MISSED'} ${s.target} ${PATH_LABEL[path]} ${key} ${value.toFixed(2)}× fastify (${atLeast ? '≥' : '≤'} ${limit})`)
    }
  }
  const startup = median(startupMs)
  if (startup !== null) {
    lines.push(`${startup <= STARTUP_LIMIT_MS ? 'met   ' : 'MISSED'} start-up ${startup.toFixed(0)} ms (≤ ${STARTUP_LIMIT_MS} ms)`)
  }
  return lines
}

export function table ({ summaries, comparisons, startupMs, notes }: TableInput): string {
  const ratioColumns = BASELINES.flatMap((baseline) => ['req/s', 'CPU', 'p99', 'RSS'].map((what) => `${baseline} ×${what}`))
  const header = [
    'target', 'path', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'RSS MiB', 'non-2xx', 'unexp.', 'errors', ...ratioColumns
  ]
  const rows = summaries.map((s) => [
    s.target, s.target === 'pgbench' ? 'INSERT' : PATH_LABEL[s.path],
    format(s.reqPerSec), format(s.p50Ms, 2), format(s.p99Ms, 2), format(s.cpuUsPerRequest, 1),
    format(s.peakRssMiB, 1), format(s.non2xx), format(s.unexpected), format(s.errors),
    ...BASELINES.flatMap((baseline) => {
      const vs = s.vs[baseline]
      return [format(vs?.reqPerSec, 3), format(vs?.cpuUsPerRequest, 2), format(vs?.p99Ms, 2), format(vs?.peakRssMiB, 2)]
    })
  ])
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)))
  const line = (cells: string[]) => cells.map((cell, i) => i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])).join('  ')
  const rounds = Math.max(0, ...summaries.map((s) => s.rounds))
  return [
    `Medians over ${rounds} round(s); × columns: this row ÷ that baseline on the same path.`,
    line(header),
    line(widths.map((width) => '-'.repeat(width))),
    ...rows.map(line),
    '',
    ...comparisons.map(({ label, path, reqPerSec, p50Ms, cpuUsPerRequest }) =>
      `${label} (${PATH_LABEL[path]}): req/s ratio ${format(reqPerSec, 3)}, p50 ratio ${format(p50Ms, 3)}, CPU ratio ${format(cpuUsPerRequest, 3)}`),
    `start-up on a fresh SQLite file (spawn → first 200 of GET /healthz): median ${format(median(startupMs), 1)} ms` +
      ` over ${startupMs.length} (${startupMs.map((ms) => ms.toFixed(0)).join(', ')} ms)`,
    '',
    'Targets (medians of this run, against the plain-Fastify baseline):',
    ...verdicts(summaries, startupMs, comparisons),
    '',
    ...notes
  ].join('\n') + '\n'
}

/** Writes the figures to `<dir>/<timestamp>.json`; returns the file's path. */
export function writeResults (dir: string, started: Date, data: unknown): string {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${started.toISOString().replace(/[:.]/g, '-')}.json`)
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n')
  return file
}
