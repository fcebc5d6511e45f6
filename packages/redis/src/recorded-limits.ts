import type { RuleTier } from '@floodgate/core/rules'
import type { RedisClient } from './connection.js'
import { boundedTtlMs } from './key-ttl.js'

/** How often a store renews the records it made, while it is open. */
export const RECORD_RENEW_MS: number = 10 * 60_000

/**
 * Add a member to a set and make sure the set lives at least ARGV[2] ms more: a set written
 * before records had a TTL (PTTL -1) gets one too. One key, so one Cluster slot.
 */
const RECORD_SCRIPT = `
redis.call('SADD', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`

/**
 * How long a record of `limits` must outlive its last renewal: until every state a host wrote
 * under that limit meanwhile is fresh again (a full window or refill, twice for a sliding
 * counter), plus two renewals a host that still uses it may miss.
 */
export function recordTtlMs(limits: RuleTier): number {
  const refill = limits.windowMs * Math.max(1, limits.burst / limits.limit)
  return boundedTtlMs(2 * refill + 2 * RECORD_RENEW_MS)
}

/**
 * Where the limits a rule's limit function answered live, for every host of a fleet (see
 * `Store.recordLimits`): a Redis set per rule state, `prefix:limits:stateId`. State ids hold no
 * braces, so on a Cluster the whole name is hashed.
 *
 * Every Floodgate key has a TTL, these sets too: each record gives its set at least
 * {@link recordTtlMs} more, and a store renews the records it made every
 * {@link RECORD_RENEW_MS} while it is open, so a set lives as long as a host that recorded
 * it, plus as long as the states its answers made, and a set of a rule nobody serves any more
 * goes away.
 */
export class RecordedLimits {
  /** What this store recorded: key → member → TTL (at most 64 answers per rule state). */
  private readonly mine = new Map<string, Map<string, number>>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
    /** The store's throttled warning, for a record key that holds something else. */
    private readonly warn: (fields: Record<string, unknown>, message: string) => void,
  ) {}

  private key(ruleStateId: string): string {
    return `${this.prefix}:limits:${ruleStateId}`
  }

  /** Add one answer; rejects when Redis fails or misses the deadline. */
  async record(ruleStateId: string, limits: RuleTier): Promise<void> {
    const key = this.key(ruleStateId)
    const member = JSON.stringify([limits.limit, limits.windowMs, limits.burst])
    const ttl = recordTtlMs(limits)
    let members = this.mine.get(key)
    if (members === undefined) this.mine.set(key, (members = new Map<string, number>()))
    members.set(member, ttl)
    this.timer ??= setInterval(() => void this.renew(), RECORD_RENEW_MS).unref()
    await this.within(this.write(key, member, ttl))
  }

  /**
   * Write every record this store made again, renewing its TTL (the timer calls it; tests
   * call it directly). Never rejects: a record that fails now is renewed next time.
   */
  async renew(): Promise<void> {
    const writes: Promise<unknown>[] = []
    for (const [key, members] of this.mine) {
      for (const [member, ttl] of members) writes.push(this.within(this.write(key, member, ttl)))
    }
    await Promise.allSettled(writes)
  }

  /** Stop renewing (the store is closing). */
  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }

  private write(key: string, member: string, ttl: number): Promise<unknown> {
    return this.client.eval(RECORD_SCRIPT, 1, key, member, String(ttl))
  }

  /**
   * Every answer recorded for the rule, by any host. A key holding something other than a set
   * of them (written by something else) reads as none, with a warning. Rejects when Redis
   * fails or is late.
   */
  async read(ruleStateId: string): Promise<RuleTier[]> {
    let members: unknown
    try {
      // Small: each host adds at most 64 answers per rule (MAX_LIMIT_VARIANTS).
      members = await this.within(this.client.smembers(this.key(ruleStateId)))
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('WRONGTYPE'))) throw err
      members = undefined
    }
    if (!Array.isArray(members)) {
      this.warn(
        { code: 'FG_WRN_STORE_RECORD_MALFORMED', key: this.key(ruleStateId) },
        'the record of limit function answers in Redis is not a set of them; read as none',
      )
      return []
    }
    const out: RuleTier[] = []
    for (const m of members) {
      const limits = typeof m === 'string' ? parse(m) : undefined
      if (limits) out.push(limits)
    }
    return out
  }

  private within<T>(pending: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      )
      pending.then(
        (v) => {
          clearTimeout(timer)
          resolve(v)
        },
        (err: unknown) => {
          clearTimeout(timer)
          reject(err instanceof Error ? err : new Error(String(err)))
        },
      )
    })
  }
}

const positive = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0

/** A recorded member, or undefined for anything else found in the set. */
function parse(member: string): RuleTier | undefined {
  let v: unknown
  try {
    v = JSON.parse(member)
  } catch {
    return undefined
  }
  if (!Array.isArray(v) || v.length !== 3 || !v.every(positive)) return undefined
  const [limit, windowMs, burst] = v as [number, number, number]
  if (limit === 0 || burst === 0) return undefined
  return { limit, windowMs, burst }
}
