import type { Metric, MetricValueWithName, Registry } from 'prom-client'

/** The counts of one label set of a histogram, observed into directly. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); past the last bound they count only in `count`. */
  readonly counts: number[]
  sum = 0
  count = 0

  constructor (readonly labels: Readonly<Record<string, string>>, private readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0)
  }

  observe (value: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && value > this.bounds[bucket]) bucket++
    if (bucket < this.counts.length) this.counts[bucket]++
    this.sum += value
    this.count++
  }

  reset (): void {
    this.counts.fill(0)
    this.sum = 0
    this.count = 0
  }
}

export interface SeriesHistogramOptions<L extends string> {
  name: string
  help: string
  labelNames: readonly L[]
  /** Upper bounds, ascending; +Inf is added. */
  buckets: readonly number[]
  registers: Registry[]
}

/**
 * A Prometheus histogram whose callers look a label set's series up once, keep it, and observe
 * into it. prom-client's Histogram validates and hashes the label object on every observation,
 * which cost about 1 µs per request (twice per create). This one is a metric of prom-client's
 * registry like any other (the registry reads a metric's `get()`), printed as its histograms are.
 */
export class SeriesHistogram<L extends string> {
  readonly name: string
  readonly help: string
  readonly aggregator = 'sum'
  private readonly byKey = new Map<string, HistogramSeries>()

  constructor (private readonly options: SeriesHistogramOptions<L>) {
    this.name = options.name
    this.help = options.help
    // prom-client's types list its own four classes; its registry needs `name`, `get` and `reset`.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric)
  }

  /** The series of these label values, in the order of `labelNames`; created on first use. */
  series (...values: string[]): HistogramSeries {
    const key = values.join('\0')
    let series = this.byKey.get(key)
    if (series === undefined) {
      const labels = Object.fromEntries(this.options.labelNames.map((name, i) => [name, values[i]]))
      series = new HistogramSeries(labels, this.options.buckets)
      this.byKey.set(key, series)
    }
    return series
  }

  reset (): void {
    for (const series of this.byKey.values()) series.reset()
  }

  /** The metric as prom-client's registry prints it: its histograms' shape. */
  async get () {
    const { name, help, buckets } = this.options
    const values: MetricValueWithName<string>[] = []
    for (const { labels, counts, sum, count } of this.byKey.values()) {
      let cumulative = 0
      buckets.forEach((le, i) => {
        cumulative += counts[i]
        values.push({ metricName: `${name}_bucket`, labels: { le, ...labels }, value: cumulative })
      })
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...labels }, value: count })
      values.push({ metricName: `${name}_sum`, labels, value: sum })
      values.push({ metricName: `${name}_count`, labels, value: count })
    }
    return { name, help, type: 'histogram', aggregator: this.aggregator, values }
  }
}
