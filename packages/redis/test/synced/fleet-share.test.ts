import { describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import type { CompiledRule } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { adoptFleetLevel, holdBack, sharedRetryAfterMs } from '../../src/synced/fleet-share.js'
import { TrackedKeys, type Tracked } from '../../src/synced/tracked-keys.js'

// Token bucket of 10, one unit per 100 ms.
const rule = testRule('token-bucket', 10, 1000)
const T0 = 1_000_000

function setup(): { memory: MemoryStore; t: Tracked; remaining: (nowMs: number) => number } {
  const memory = new MemoryStore()
  const t = new TrackedKeys('p', 10, () => {}).track(rule, 'k')
  const probe = (r: CompiledRule, nowMs: number): number =>
    memory.consume([{ rule: r, key: 'k', cost: 0, maxWaitMs: 0, shadow: false }], nowMs)[0]!
      .remaining
  return { memory, t, remaining: (nowMs) => probe(rule, nowMs) }
}

describe('adoptFleetLevel', () => {
  it('alone on the key: learns the level, leaves the exact local bucket alone', () => {
    const { memory, t, remaining } = setup()
    memory.consume([{ rule, key: 'k', cost: 3, maxWaitMs: 0, shadow: false }], T0)
    t.unacked.push(1, 3)
    adoptFleetLevel(memory, t, { used: 3, hosts: 1 }, T0, true)
    expect(t).toMatchObject({ known: true, unacked: [], share: 1, room: 7 })
    expect(remaining(T0)).toBe(7)
  })

  it('shared with another host: holds its share of the room plus what it admitted since', () => {
    const { memory, t, remaining } = setup()
    t.pending = 2
    adoptFleetLevel(memory, t, { used: 4, hosts: 2 }, T0, true)
    // 6 left in the fleet bucket, half of it is this host's: 7 used, and 2 admitted since.
    expect(t).toMatchObject({ share: 0.5, room: 6, adjustedMs: T0, fullAtMs: T0 + 900 })
    expect(remaining(T0)).toBe(1)
  })

  it('keeps at least one unit of the room, so a trickle over many hosts is not refused', () => {
    const { memory, t, remaining } = setup()
    adoptFleetLevel(memory, t, { used: 8, hosts: 5 }, T0, true)
    expect(remaining(T0)).toBe(1) // a fifth of 2 would round down to nothing
  })

  it('a fleet in debt: the local bucket owes the whole debt', () => {
    const { memory, t } = setup()
    adoptFleetLevel(memory, t, { used: 15, hosts: 2 }, T0, true)
    expect(t.room).toBe(-5)
    const r = memory.consume([{ rule, key: 'k', cost: 1, maxWaitMs: 0, shadow: false }], T0)[0]!
    expect(r.allowed).toBe(false)
    expect(r.retryAfterMs).toBe(600) // 15 used of 10: 6 units to refill before one fits
  })

  it('an entry no longer held only learns', () => {
    const { memory, t, remaining } = setup()
    adoptFleetLevel(memory, t, { used: 9, hosts: 3 }, T0, false)
    expect(t).toMatchObject({ known: true, share: 1 / 3, room: 1 })
    expect(remaining(T0)).toBe(10)
  })
})

describe('holdBack', () => {
  it('charges back the part of the refill owed to the other hosts', () => {
    const { memory, t, remaining } = setup()
    adoptFleetLevel(memory, t, { used: 4, hosts: 2 }, T0, true) // local level 7, full at +700
    expect(remaining(T0)).toBe(3)
    // 200 ms refill 2 units locally; one of them is the other host's.
    expect(holdBack(memory, t, T0 + 200)).toBe(false)
    expect(remaining(T0 + 200)).toBe(4)
    expect(t).toMatchObject({ adjustedMs: T0 + 200, fullAtMs: T0 + 800 })
    // Called again at the same time, nothing more is charged.
    expect(holdBack(memory, t, T0 + 200)).toBe(false)
    expect(remaining(T0 + 200)).toBe(4)
  })

  it('a bucket that refilled to full holds only its share of a full fleet bucket, and says so', () => {
    const { memory, t, remaining } = setup()
    adoptFleetLevel(memory, t, { used: 4, hosts: 2 }, T0, true)
    expect(holdBack(memory, t, T0 + 10_000)).toBe(true)
    expect(remaining(T0 + 10_000)).toBe(5)
    expect(t.fullAtMs).toBe(T0 + 10_000 + 500)
  })

  it('a fleet in debt: the debt is paid back at the full rate, the refill after it is shared', () => {
    const { memory, t, remaining } = setup()
    adoptFleetLevel(memory, t, { used: 12, hosts: 2 }, T0, true)
    // 2 units of debt: the whole refill pays it back, as it does in the fleet bucket...
    expect(holdBack(memory, t, T0 + 200)).toBe(false)
    expect(remaining(T0 + 200)).toBe(0)
    // ...and from then on this host refills half a unit per 100 ms: the other half is the
    // other host's (a whole unit each would admit twice the fleet's refill).
    expect(holdBack(memory, t, T0 + 300)).toBe(false)
    expect(remaining(T0 + 300)).toBe(0)
    expect(holdBack(memory, t, T0 + 400)).toBe(false)
    expect(remaining(T0 + 400)).toBe(1)
  })
})

describe('sharedRetryAfterMs', () => {
  it('waits out the debt at the full rate, the rest at the host share of it', () => {
    const { memory, t } = setup()
    adoptFleetLevel(memory, t, { used: 12, hosts: 2 }, T0, true)
    const r = memory.consume([{ rule, key: 'k', cost: 1, maxWaitMs: 0, shadow: false }], T0)[0]!
    expect(r.retryAfterMs).toBe(300) // the local bucket's answer, at the full rate
    // 2 units of debt take 200 ms; the unit after it, at half the rate, 200 ms more.
    expect(sharedRetryAfterMs(t, r.retryAfterMs, T0)).toBe(400)
    // Within the debt the local answer stands; alone on the key, too.
    expect(sharedRetryAfterMs(t, 150, T0)).toBe(150)
    t.share = 1
    expect(sharedRetryAfterMs(t, 300, T0)).toBe(300)
  })
})
