/** One label value's buckets (not cumulative: each observation counts in one bucket). */
interface Series {
  readonly counts: Float64Array
  sum: number
  count: number
}

/** A sample as prom-client's registry formats it. */
interface Sample {
  readonly metricName: string
  readonly labels: Record<string, string | number>
  readonly value: number
}

/**
 * A histogram with one label, in the shape of a prom-client metric (`name`, `help`, `type`,
 * `get()`), registered with `registry.registerMetric`. prom-client's own `Histogram.observe`
 * resolves and hashes the labels on every call; this one finds a bucket in a plain array, so
 * an observation on the request path costs a few comparisons. The registry formats it like
 * any histogram.
 */
export class LabelledHistogram {
  readonly type = 'histogram'
  /** How prom-client's cluster registry merges workers' values. */
  readonly aggregator = 'sum'
  private readonly series = new Map<string, Series>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly buckets: readonly number[],
  ) {}

  /** The series of one label value, made on first use (label values are capped by the caller). */
  seriesFor(labelValue: string): (seconds: number) => void {
    let s = this.series.get(labelValue)
    if (s === undefined) {
      s = { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 }
      this.series.set(labelValue, s)
    }
    const series = s
    const buckets = this.buckets
    return (seconds) => {
      let i = 0
      while (i < buckets.length && seconds > buckets[i]!) i++
      series.counts[i]!++
      series.sum += seconds
      series.count++
    }
  }

  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: Sample[] } {
    const values: Sample[] = []
    for (const [labelValue, s] of this.series) {
      let cumulative = 0
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += s.counts[i]!
        values.push({
          metricName: `${this.name}_bucket`,
          labels: {
            [this.labelName]: labelValue,
            le: i < this.buckets.length ? this.buckets[i]! : '+Inf',
          },
          value: cumulative,
        })
      }
      values.push({
        metricName: `${this.name}_sum`,
        labels: { [this.labelName]: labelValue },
        value: s.sum,
      })
      values.push({
        metricName: `${this.name}_count`,
        labels: { [this.labelName]: labelValue },
        value: s.count,
      })
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    }
  }

  reset(): void {
    this.series.clear()
  }
}
