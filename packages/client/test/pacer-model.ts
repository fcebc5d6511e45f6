// The reference model of createPacer: slow, simple, and written from the description rather
// than from the implementation.
//
// Bursty: a "theoretical next free time" `tat`. Each permit moves it on by one interval; the
// permits stored while idle are the time `tat` lags behind the clock, at most `burst`
// intervals. A call goes at `max(tat, now)`.
//
// Warming up: at most a warm-up period's worth of permits at the steady rate are stored,
// half of them above a threshold. The time one permit costs is the interval below the
// threshold, and rises in a straight line to three intervals at the top; the model
// integrates it numerically, slice by slice. Idleness refills the store in one warm-up period.

export interface ModelPacer {
  readonly rate: number
  readonly burst?: number | undefined
  readonly warmup?: number | undefined
}

export type ModelCall =
  | { readonly kind: 'acquire'; readonly at: number; readonly cost: number }
  | { readonly kind: 'try'; readonly at: number; readonly cost: number; readonly timeoutMs: number }

/** When each call is granted, or `false` for a tryAcquire that would not get a turn in time. */
export function modelGrants(
  pacer: ModelPacer,
  createdAt: number,
  calls: readonly ModelCall[],
): (number | false)[] {
  return pacer.warmup === undefined
    ? burstyModel(pacer.rate, pacer.burst ?? pacer.rate, createdAt, calls)
    : warmingUpModel(pacer.rate, pacer.warmup, createdAt, calls)
}

function burstyModel(
  rate: number,
  burst: number,
  createdAt: number,
  calls: readonly ModelCall[],
): (number | false)[] {
  const interval = 1000 / rate
  let tat = createdAt
  return calls.map((call) => {
    const grant = Math.max(tat, call.at)
    if (call.kind === 'try' && grant - call.at > call.timeoutMs) return false
    // No more than `burst` permits stored: tat lags the clock by at most burst intervals.
    tat = Math.max(tat, call.at - burst * interval)
    tat += call.cost * interval
    return grant
  })
}

const SLICES = 1000

function warmingUpModel(
  rate: number,
  warmupMs: number,
  createdAt: number,
  calls: readonly ModelCall[],
): (number | false)[] {
  const interval = 1000 / rate
  const max = warmupMs / interval
  const threshold = max / 2
  const timePerPermit = (stored: number): number =>
    stored <= threshold
      ? interval
      : interval + (2 * interval * (stored - threshold)) / (max - threshold)
  /** The time that taking the permits between `from` and `to` costs, slice by slice. */
  const integrate = (from: number, to: number): number => {
    let sum = 0
    const width = (to - from) / SLICES
    for (let i = 0; i < SLICES; i++) sum += timePerPermit(from + (i + 0.5) * width) * width
    return sum
  }
  let stored = max // a new pacer starts cold
  let free = createdAt
  return calls.map((call) => {
    const grant = Math.max(free, call.at)
    if (call.kind === 'try' && grant - call.at > call.timeoutMs) return false
    if (call.at > free) {
      stored = Math.min(max, stored + (max * (call.at - free)) / warmupMs)
      free = call.at
    }
    const fromStore = Math.min(call.cost, stored)
    const low = stored - fromStore
    // Split at the threshold so that each piece is a straight line.
    let cost = 0
    if (low < threshold) cost += integrate(low, Math.min(stored, threshold))
    if (stored > threshold) cost += integrate(Math.max(low, threshold), stored)
    cost += (call.cost - fromStore) * interval
    free += cost
    stored = low
    return grant
  })
}
