// Test-only helpers for the algorithm tests (not exported from the package).
import {
  newResult,
  type Algorithm,
  type AlgorithmParams,
  type AlgorithmResult,
} from './algorithm.js'

/** One key's state for `algorithm`, placed at an offset between guard slots that must stay untouched. */
export interface Runner {
  readonly state: Float64Array
  readonly offset: number
  consume(cost: number, nowMs: number, maxWaitMs?: number, commit?: boolean): AlgorithmResult
  refund(cost: number, nowMs: number): void
  charge(cost: number, nowMs: number): void
  idleAtMs(nowMs: number): number
  snapshot(): number[]
}

const GUARD = 12345.5

export function runner(algorithm: Algorithm, params: AlgorithmParams): Runner {
  const size = algorithm.stateSize(params)
  const offset = 3
  const state = new Float64Array(size + offset + 2)
  state.fill(GUARD, 0, offset)
  state.fill(GUARD, offset + size)
  const out = newResult()
  // A stale result object proves consume writes every field on every call.
  const poison = (): void => {
    out.allowed = !out.allowed
    out.waitMs = Number.NaN
    out.limit = Number.NaN
    out.remaining = Number.NaN
    out.resetMs = Number.NaN
    out.retryAfterMs = Number.NaN
  }
  const checkGuards = (): void => {
    for (let i = 0; i < offset; i++)
      if (state[i] !== GUARD) throw new Error('wrote before its slice')
    for (let i = offset + size; i < state.length; i++) {
      if (state[i] !== GUARD) throw new Error('wrote after its slice')
    }
  }
  return {
    state,
    offset,
    consume(cost, nowMs, maxWaitMs = 0, commit = true) {
      poison()
      algorithm.consume(state, offset, params, cost, nowMs, maxWaitMs, commit, out)
      checkGuards()
      return { ...out }
    },
    refund(cost, nowMs) {
      algorithm.refund(state, offset, params, cost, nowMs)
      checkGuards()
    },
    charge(cost, nowMs) {
      if (!algorithm.charge) throw new Error(`${algorithm.name} has no charge`)
      algorithm.charge(state, offset, params, cost, nowMs)
      checkGuards()
    },
    idleAtMs: (nowMs) => algorithm.idleAtMs(state, offset, params, nowMs),
    snapshot: () => Array.from(state.subarray(offset, offset + size)),
  }
}

/** Every field is a finite, non-negative whole number, and allowed/retryAfterMs agree. */
export function saneResult(r: AlgorithmResult): string | undefined {
  for (const k of ['waitMs', 'limit', 'remaining', 'resetMs', 'retryAfterMs'] as const) {
    const v = r[k]
    if (!Number.isInteger(v) || v < 0) return `${k} = ${v}`
  }
  if (r.allowed && r.retryAfterMs !== 0) return `allowed with retryAfterMs ${r.retryAfterMs}`
  if (!r.allowed && r.retryAfterMs < 1) return `refused with retryAfterMs ${r.retryAfterMs}`
  if (!r.allowed && r.waitMs !== 0) return `refused with waitMs ${r.waitMs}`
  if (r.remaining > r.limit) return `remaining ${r.remaining} > limit ${r.limit}`
  return undefined
}
