import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { RuleInput } from '../rules/schema.js'
import type { AdaptiveState } from './adaptive-state.js'

// A deterministic discrete-event simulation of a service behind an adaptive rule: clients send
// requests through the real limiter (MemoryStore, injected clock), admitted requests take a
// latency that grows with the requests the service holds, refused ones retry later. No timer
// and no wall clock: the same inputs give the same run.

/** The service: `baseMs` for each request while it holds at most `capacity`, then in proportion. */
export interface ServiceModel {
  readonly baseMs: number
  readonly capacity: number
  /** Each latency scaled by a factor drawn evenly from 1 ± jitter (a seeded generator); default 0. */
  readonly jitter?: number
}

/** The latency of a request admitted while the service holds `held` requests (itself included). */
export function latencyOf(s: ServiceModel, held: number, u = 0): number {
  return s.baseMs * Math.max(1, held / s.capacity) * (1 + (s.jitter ?? 0) * u)
}

/** A seeded generator of numbers in [-1, 1) (a 32-bit LCG): the same run every time. */
function seeded(seed: number): () => number {
  let x = seed >>> 0
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0
    return x / 2 ** 31 - 1
  }
}

/** A client: `concurrency` requests outstanding at once, each re-sent after `thinkMs`. */
export interface SimClient {
  readonly ip: string
  readonly concurrency: number
  /** Pause between a response and the next request. */
  readonly thinkMs: number
  /** Pause before a refused request is sent again. */
  readonly retryMs: number
}

export interface ClientTally {
  sent: number
  admitted: number
  refused: number
}

export interface WindowRecord {
  /** The window's end. */
  readonly atMs: number
  readonly state: AdaptiveState
  /** The measured percentile of the latencies completed in the window, client side. */
  readonly p99Ms: number | undefined
  readonly completed: number
}

export interface SimulationOptions {
  readonly rule: RuleInput
  readonly clients: readonly SimClient[]
  /** The service in force from `fromMs` on (the first from 0). */
  readonly phases: readonly { readonly fromMs: number; readonly service: ServiceModel }[]
  readonly durationMs: number
  /** How often the state is recorded (the rule's window, usually). */
  readonly recordEveryMs: number
}

export interface SimulationResult {
  readonly windows: readonly WindowRecord[]
  readonly tally: ReadonlyMap<string, ClientTally>
  readonly limiter: Limiter
}

interface Event {
  readonly at: number
  readonly seq: number
  readonly run: () => void
}

function p99(values: number[]): number | undefined {
  if (values.length === 0) return undefined
  values.sort((a, b) => a - b)
  return values[Math.min(values.length - 1, Math.ceil(values.length * 0.99) - 1)]
}

/** Run the simulation to `durationMs` and return what was recorded. */
export function simulate(o: SimulationOptions): SimulationResult {
  let now = 0
  let seq = 0
  const queue: Event[] = []
  const at = (t: number, run: () => void): void => {
    const e = { at: t, seq: seq++, run }
    // Keep the queue sorted by time, then by insertion: a binary search for the place.
    let lo = 0
    let hi = queue.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const q = queue[mid]!
      if (q.at < e.at || (q.at === e.at && q.seq < e.seq)) lo = mid + 1
      else hi = mid
    }
    queue.splice(lo, 0, e)
  }
  const limiter = createLimiter({ clock: () => now, rules: [o.rule] })
  const ruleId = o.rule.id
  const tally = new Map<string, ClientTally>()
  let held = 0
  let latencies: number[] = []
  const random = seeded(42)
  const serviceAt = (t: number): ServiceModel => {
    let s = o.phases[0]!.service
    for (const p of o.phases) if (p.fromMs <= t) s = p.service
    return s
  }

  const send = (c: SimClient): void => {
    const t = tally.get(c.ip)!
    t.sent++
    const d = limiter.check({ method: 'GET', path: '/work', ip: c.ip, headers: {} }) as Decision
    if (!d.allowed) {
      t.refused++
      at(now + c.retryMs, () => send(c))
      return
    }
    t.admitted++
    held++
    const started = now
    at(now + latencyOf(serviceAt(now), held, random()), () => {
      held--
      limiter.release(d)
      latencies.push(now - started)
      at(now + c.thinkMs, () => send(c))
    })
  }

  for (const c of o.clients) {
    tally.set(c.ip, { sent: 0, admitted: 0, refused: 0 })
    for (let i = 0; i < c.concurrency; i++) at(i, () => send(c))
  }
  const windows: WindowRecord[] = []
  const record = (): void => {
    const state = limiter.adaptive(ruleId)!
    windows.push({ atMs: now, state, p99Ms: p99(latencies), completed: latencies.length })
    latencies = []
    if (now + o.recordEveryMs <= o.durationMs) at(now + o.recordEveryMs, record)
  }
  at(o.recordEveryMs, record)
  // Bounded: every event is either a record or a request's step, and time only moves forward.
  const maxEvents = 5_000_000
  for (let n = 0; queue.length > 0 && n < maxEvents; n++) {
    const e = queue.shift()!
    if (e.at > o.durationMs) break
    now = e.at
    e.run()
  }
  return { windows, tally, limiter }
}
