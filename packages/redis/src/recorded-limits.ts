import type { RuleTier } from '@floodgate/core/rules'
import type { RedisClient } from './connection.js'

/**
 * Where the limits a rule's limit function answered live, for every host of a fleet (see
 * `Store.recordLimits`): a Redis set per rule state, `prefix:limits:stateId`. State ids hold no
 * braces, so on a Cluster the whole name is hashed.
 */
export class RecordedLimits {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  private key(ruleStateId: string): string {
    return `${this.prefix}:limits:${ruleStateId}`
  }

  /** Add one answer; rejects when Redis fails or misses the deadline. */
  async record(ruleStateId: string, limits: RuleTier): Promise<void> {
    const member = JSON.stringify([limits.limit, limits.windowMs, limits.burst])
    await this.within(this.client.sadd(this.key(ruleStateId), member))
  }

  /** Every answer recorded for the rule, by any host; rejects when Redis fails or is late. */
  async read(ruleStateId: string): Promise<RuleTier[]> {
    // Small: each host adds at most 64 answers per rule (MAX_LIMIT_VARIANTS).
    const members = await this.within(this.client.smembers(this.key(ruleStateId)))
    const out: RuleTier[] = []
    for (const m of members) {
      const limits = parse(m)
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
